# Sourced by scripts/browser.sh and scripts/node.sh: apt_install PACKAGE... installs Debian
# packages from the package lists the machine already has (and the .debs apt has cached),
# and runs `apt-get update` only when that fails (no lists, or a .deb they name is gone
# from the mirror): the update alone is ~10 s here, the download of a newer chromium ~8 s.
apt_install() {
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  # Another apt run (a parallel job) may hold the lock: wait for it instead of failing.
  local apt=($sudo apt-get -o DPkg::Lock::Timeout=600)
  if ! "${apt[@]}" install -y -qq "$@" >/dev/null 2>&1; then
    "${apt[@]}" update -qq >/dev/null
    "${apt[@]}" install -y -qq "$@" >/dev/null
  fi
}
