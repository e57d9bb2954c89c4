from wiredump.cli.entry import main

main()
