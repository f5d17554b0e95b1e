import sys

from clstream.cli import main

sys.exit(main())
