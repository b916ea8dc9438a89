"""Run with a Hermes build's own Python: Hermes' install scanner (``tools.plugin_guard.scan_plugin``, what
``hermes plugins install`` and ``update`` run) over a plugin folder; prints its verdict and findings as JSON.

``python scan.py PLUGIN_DIR``
"""

import json
import sys
from pathlib import Path

from tools.plugin_guard import scan_plugin

result = scan_plugin(Path(sys.argv[1]))
print(json.dumps({"verdict": result.verdict,
                  "findings": [{"severity": f.severity, "pattern": f.pattern_id, "file": f.file, "line": f.line,
                                "match": f.match} for f in result.findings]}))
