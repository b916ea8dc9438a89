"""``uninstall``: print the commands that remove the plugin and all it added; it removes nothing itself."""

from __future__ import annotations

from .app import json_option, main
from .output import echo, echo_json


@main.command()
@json_option
def uninstall(as_json):
    """Print the commands that remove the plugin from this Hermes home; runs none of them.

    Run it before removing anything (as `hermes semantic-skills uninstall`, so
    it sees Hermes' own Python and home). It lists, for what is there, in the
    order to run them: the settings and the plugin's name in config.yaml, the
    plugin folder (`hermes plugins remove`, or `rm` of a link), the package
    with the dependencies that nothing else installed needs (commented out,
    naming them, while other Hermes homes on this Python have the plugin), the
    plugin's state folder (its index, dedupe and decision records), and an
    index kept elsewhere, each with the disk space it frees (measured: the
    blocks its files take).
    """
    from ..hermes.doctor.removal import gateway_restart, removal_steps, size_words

    steps = removal_steps()
    if as_json:
        echo_json([{"command": s.command, "removes": s.removes, "frees_bytes": s.frees,
                    "shared_with": list(s.shared_with)} for s in steps])
        return
    echo("# Nothing has been removed. These commands remove semantic-skills; run them in this order:")
    for step in steps:
        frees = f" (frees {size_words(step.frees)})" if step.frees else ""
        if step.shared_with:  # shown, commented out: removing it would stop the plugin in those homes
            echo(f"# {step.command}    # {step.removes}{frees}; NOT YET: the plugin in "
                 f"{', '.join(step.shared_with)} runs on these too; run it once it is removed from each of them")
        else:
            echo(f"{step.command}    # {step.removes}{frees}")
    freed = sum(s.frees for s in steps if not s.shared_with)
    echo(f"# Together they free {size_words(freed)} on disk, as measured now. Then restart a "
         f"running gateway ({gateway_restart()}), which still has the plugin loaded.")
