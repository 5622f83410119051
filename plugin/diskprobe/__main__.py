from diskprobe.cli import main

raise SystemExit(main())
