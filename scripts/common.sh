# scripts/common.sh: shared by the README's two commands and the benchmarks.
# Installs missing Debian packages and configures the builds; sourced, not run.

PUNCH_PACKAGES="gcc libc6-dev meson ninja-build pkg-config libmicrohttpd-dev libjansson-dev
libcurl4-openssl-dev libsqlite3-dev libopenmpi-dev openmpi-bin libopenblas-dev libdnnl-dev libcmocka-dev
zlib1g-dev dataset-fashion-mnist fortunes fortunes-de fortunes-es fortunes-it python3 python3-numpy python3-requests python3-jsonschema curl procps
iproute2 groff-base systemd slurmctld slurmd slurm-client munge
libgnutls28-dev openssl
chromium chromium-driver python3-selenium
libonnx-dev libprotobuf-c-dev protobuf-c-compiler python3-onnx nodejs npm"

# A machine whose Node.js comes from elsewhere (NodeSource's nodejs bundles npm
# and conflicts with Debian's npm package) keeps its own: asking apt for npm
# there fails the whole install.
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  PUNCH_PACKAGES=${PUNCH_PACKAGES/ nodejs npm/}
fi

say() { printf '==> %s\n' "$*" >&2; }

# ensure_packages PKG...: apt-get install only what dpkg does not already have.
ensure_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    say "packages: all $# present"
    return 0
  fi
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  if ! ls /var/lib/apt/lists/ 2>/dev/null | grep -q '_Packages'; then
    say "apt-get update (no package lists yet)"
    $sudo apt-get update -q -o DPkg::Lock::Timeout=300 >&2
  fi
  say "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if ! $sudo apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=300 "${missing[@]}" >&2; then
    say "install failed; refreshing package lists and retrying"
    $sudo apt-get update -q -o DPkg::Lock::Timeout=300 >&2
    $sudo apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=300 "${missing[@]}" >&2
  fi
}

# The CUDA toolkit lives outside PATH; meson finds nvcc through PATH.
if [ -x /usr/local/cuda/bin/nvcc ]; then
  case ":$PATH:" in *:/usr/local/cuda/bin:*) ;; *) PATH="$PATH:/usr/local/cuda/bin" ;; esac
  export PATH
fi

# punch_build DIR [MESON-OPTIONS...]: configure once, then compile (incremental).
punch_build() {
  local dir=$1; shift
  if [ ! -f "$dir/build.ninja" ]; then
    say "meson setup $dir $*"
    meson setup "$dir" "$@" >&2
  fi
  say "meson compile -C $dir"
  meson compile -C "$dir" >&2
}

# Open MPI as root on a small machine: allowed, oversubscribed, shared memory.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader
