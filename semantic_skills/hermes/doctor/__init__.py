"""``semantic-skills doctor`` and ``uninstall``: a Hermes home checked line by line, and what removes the plugin.

``report`` is the vocabulary (a :class:`~.report.Check`, its statuses, a
:class:`~.report.Progress` note, the :class:`~.report.Setup` every check reads
and the :class:`~.report.Verdict`), ``run`` yields the checks as each
finishes, ``setup_checks`` the Python, Hermes, the install and the folders,
``serving_check`` whether this is the Python the Hermes serving the home runs the plugin with,
``dependencies`` what this Python lacks (read the same way for ``register()``'s
log line), ``settings_check`` the settings as the plugin really runs on them,
``routing_checks`` the skills, the index and a real routing worker,
``install_fix`` the one install command ``doctor``, ``register()`` and a
command stopped by a missing package give, and ``removal`` the commands that remove the plugin from a home.
"""
