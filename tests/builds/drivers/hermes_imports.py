"""Run with a Hermes build's own Python: the imports ``hermes plugins validate`` reports as private core imports in a
plugin folder, keeping those of modules the Hermes distribution ships (on a pip-installed Hermes the check also
names every third-party package); prints them as JSON, or null where this Hermes has no such check.

``python hermes_imports.py PLUGIN_DIR``
"""

import importlib.metadata as metadata
import json
import sys
from pathlib import Path

try:
    from hermes_cli.plugin_validate_private_imports import private_import_findings
except ImportError:
    print("null")
    sys.exit(0)

hermes = metadata.packages_distributions()["hermes_cli"][0]
own = {top for top, owners in metadata.packages_distributions().items() if hermes in owners}
found = [finding for finding in private_import_findings(Path(sys.argv[1]))
         if finding.split()[-1].split(".")[0] in own]
print(json.dumps(found))
