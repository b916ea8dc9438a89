# Read by tests/builds/test_build_docs.py before the lines it pastes: they run as a user's shell runs them, one by one,
# but for pip, which would change the build's venv (shared by every test): a pip line is checked, not run (its
# command exists, and so does every path it names). Each line is reported to $PASTE_REPORT as
# "ran ...", "checked ...", "missing NAME" (a command or path that does not exist) or "failed (STATUS) ...".
# With $PLUGINS_STAND_IN set (a build whose plugin commands publish through PM, whose download cannot run here),
# `hermes plugins ...` runs through it instead (tests/builds/hermes_without_pm.py).
__said() { printf '%s\n' "$*" >> "$PASTE_REPORT"; }
command_not_found_handle() { __said "missing ${1:-(an empty command name)}"; return 127; }
trap '__status=$?; [[ -n $__skipped ]] || __said "failed ($__status) $BASH_COMMAND"' ERR
set -E  # the ERR trap holds in command substitutions too
__before() {
    __skipped=
    (( ${#FUNCNAME[@]} > 1 || BASH_SUBSHELL > 0 )) && return 0  # inside a function, or what an assignment computes
    local command=$BASH_COMMAND words=() word
    [[ $command =~ ^[A-Za-z_][A-Za-z0-9_]*=\"?\$\( ]] && return 0  # NAME="$(...)": runs, its commands too
    eval "words=($command)" 2> /dev/null || { __said "failed (unreadable) $command"; return 0; }
    while (( ${#words[@]} > 1 )) && [[ ${words[0]} =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; do words=("${words[@]:1}"); done
    if [[ " ${words[*]} " == *" -m pip "* || ${words[0]##*/} == pip ]]; then
        [[ -x ${words[0]} ]] || type -t "${words[0]}" > /dev/null || __said "missing ${words[0]}"
        for word in "${words[@]:1}"; do
            [[ $word == /* && ! -e ${word%%\[*} ]] && __said "missing ${word%%\[*}"
        done
        __said "checked ${words[*]}"
        __skipped=1
        return 1
    fi
    if [[ -n $PLUGINS_STAND_IN && ${words[0]##*/} == "$HERMES_COMMAND" && ${words[1]} == plugins ]]; then
        __said "ran (PM stood in for) ${words[*]}"
        $PLUGINS_STAND_IN "${words[@]:1}" || __said "failed ($?) ${words[*]}"
        __skipped=1
        return 1
    fi
    __said "ran ${words[*]}"
}
shopt -s extdebug  # a DEBUG trap that returns 1 skips the command
trap __before DEBUG
