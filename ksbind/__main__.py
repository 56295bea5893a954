import sys

from ksbind.cli import main

sys.exit(main())
