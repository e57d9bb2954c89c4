from wiredump.cli.app import main

main()
