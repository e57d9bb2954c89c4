"""The command line: typer app and rich rendering."""
