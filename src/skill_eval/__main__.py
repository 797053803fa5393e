from skill_eval.cli import main

raise SystemExit(main())
