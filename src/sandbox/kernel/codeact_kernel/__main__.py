"""Entry point: `python3 /opt/codeact/codeact_kernel` (this directory) or
`python3 -m codeact_kernel`."""

import os
import sys

if not __package__:
    # Run as a directory: sys.path[0] is this directory; import the package from its parent
    # (which user code then sees as sys.path[0], as with a script there).
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from codeact_kernel.kernel import main  # noqa: E402

sys.exit(main())
