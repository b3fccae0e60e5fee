from umprof.cli import main

if __name__ == "__main__":
    main()
