from ktwizard.cli import main

raise SystemExit(main())
