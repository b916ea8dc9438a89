"""``python hermes_without_pm.py ARGS``: Hermes' own command line (``hermes ARGS``) with one call replaced.

Hermes 0.22 publishes every plugin install, update and enable through its
package manager, PM: ``pm.client.sync_venv`` starts PM's worker, which first
downloads a managed CPython from the internet. That download is the one thing
that cannot run here (no network), so that call alone is replaced by a
recorder. The recorder does what a successful PM run leaves behind when the
dependency environment is already prepared (the build venv holds every
dependency the plugin declares): it publishes the change with PM's own
publication objects (a staged plugin tree moved over its install and its
install record written, or the proposed ``plugins.enabled``/``disabled``
written to config.yaml) and commits it, and builds no environment. Each call
is appended as one JSON line to the file ``$PM_RECORD`` names. Everything else
is Hermes' own code, unchanged: the scan, the consent questions, admission.
"""

import json
import os
import sys


def record(kind: str, data: dict) -> None:
    path = os.environ.get("PM_RECORD")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"kind": kind, **data}, default=str) + "\n")


def prepared_sync_venv(extras=None, *, explicit=False, plugins=None, **options):
    from hermes_cli.runtime_state import finish_publication, recover_publication
    from pm import paths
    from pm.plugin_inputs import Selection, StagedUpdate
    from pm.publication import PluginSelection, StagedPlugin

    if isinstance(plugins, Selection):
        change = PluginSelection(dict(plugins.data))
        record("selection", {"explicit": explicit, "enabled": sorted(plugins.data["enabled"]),
                             "disabled": sorted(plugins.data["disabled"])})
    elif isinstance(plugins, StagedUpdate):
        change = StagedPlugin(dict(plugins.data))
        record("staged", {"explicit": explicit, "target": plugins.data["target"], "active": change.active})
    else:
        record("other", {"extras": extras, "explicit": explicit, "plugins": repr(plugins), "options": options})
        raise RuntimeError("this test harness replaces PM only for plugin publication")
    project = paths.repo_root()
    recover_publication(project)
    change.publish(project)
    finish_publication(project)


def main() -> int:
    import pm.client

    pm.client.sync_venv = prepared_sync_venv
    from hermes_cli.main import main as hermes_main

    sys.argv = ["hermes", *sys.argv[1:]]
    return hermes_main()


if __name__ == "__main__":
    sys.exit(main())
