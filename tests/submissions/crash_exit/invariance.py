import sys

sys.exit("bye")     # at import time
