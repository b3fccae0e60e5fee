from umprof.cli import main

main()
