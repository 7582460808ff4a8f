"""``python -m agent_bridge.demo_agent``"""

from .cli import main

raise SystemExit(main())
