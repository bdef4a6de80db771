from contextwright.cli import main

main()
