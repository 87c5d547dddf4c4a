#!/usr/bin/env bash
# Install the system packages Herdsman uses, when they are missing:
#   bubblewrap        isolates the local sandbox (without it, the bash tool is off by default)
#   libseccomp2       builds the jail's seccomp filter (through the pyseccomp binding)
#   slirp4netns       the network of a local jail with sandbox.network: true (its own namespace, NATed)
#   cmake, g++        build llama.cpp for the embedded local model
#   postgresql, redis-server  real servers for the test suite (the stream bridge uses Redis)
#   podman, runc, busybox-static  a Docker-API engine and a tiny image for the docker provider's tests
#   chromium          the headless browser the web UI's tests drive (Playwright with Debian's Chromium)
#   fonts-wqy-microhei  a CJK font (1.6 MB to download, 5 MB installed; fonts-noto-cjk is 57 MB), so
#                     Chromium draws Chinese as glyphs in the web UI's tests, not empty boxes
#   tmux              a real terminal for the test that answers herdsman setup's questions
#   nginx             runs deploy/compose/nginx.conf in the deployment tests (its service is not started)
#   btrfs-progs       makes the btrfs volume whose quota groups bound each thread's disk (sandbox.quota_volume)
#   python3-numpy ... the Python packages of the sandbox image (docker/sandbox/Dockerfile) for the local
#                     sandbox too, whose commands use this machine's python3: a chart needs matplotlib
#   graphviz, espeak-ng, fonts-dejavu-core  programs the public skills run in the sandbox: diagram (dot),
#                     text-to-speech (espeak-ng), image-tools (the font of its labels)
#   python3-docx ...  the office skills' libraries (skills/public: word-document, pdf-report, letter-or-email);
#                     python-pptx (slide-deck) has no Debian package: pip puts it under /usr/local, which
#                     the jail shows read-only with the rest of /usr, its dependencies coming from Debian
# As root it installs them with apt-get; otherwise it says what to install and goes on.
set -euo pipefail

need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
ldconfig -p 2>/dev/null | grep -q 'libseccomp\.so\.2' || need+=(libseccomp2)  # the jail's seccomp filter
command -v slirp4netns >/dev/null 2>&1 || need+=(slirp4netns)  # sandbox.network for the local jail
command -v ip >/dev/null 2>&1 || need+=(iproute2)  # the networked-jail red-team test makes its own network namespace
command -v setpriv >/dev/null 2>&1 || need+=(util-linux)  # the red-team suite runs the jail as a non-root user too
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v g++ >/dev/null 2>&1 || need+=(g++)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v podman >/dev/null 2>&1 || need+=(podman catatonit)  # catatonit: the init of --init containers
command -v runc >/dev/null 2>&1 || [ -x /usr/sbin/runc ] || need+=(runc)
[ -x /bin/busybox ] || [ -x /usr/bin/busybox ] || need+=(busybox-static)
[ -x /usr/bin/chromium ] || need+=(chromium)  # headless browser for the web UI's Playwright tests
# any font that covers Chinese will do (fontconfig's list, fc-list: the fontconfig package, only
# recommended by the font); without one Chromium draws every character as an empty box
[ -n "$(fc-list :lang=zh family 2>/dev/null)" ] || need+=(fontconfig fonts-wqy-microhei)
command -v tmux >/dev/null 2>&1 || need+=(tmux)  # a real terminal for the setup wizard's test
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)  # the Compose stack's proxy config, run by the tests
# the python3 the jail runs: the first on its PATH (not a venv's or pyenv's that comes first here)
sandbox_python=$(PATH=/usr/local/bin:/usr/bin:/bin command -v python3 || echo /usr/bin/python3)
# the sandbox image's Python packages (docker/sandbox/Dockerfile), for the local sandbox's python3
"$sandbox_python" -c 'import numpy, pandas, matplotlib, openpyxl, yaml, requests, bs4, lxml, PIL' >/dev/null 2>&1 \
  || need+=(python3-numpy python3-pandas python3-matplotlib python3-openpyxl python3-yaml python3-requests python3-bs4 python3-lxml python3-pil)
command -v dot >/dev/null 2>&1 || need+=(graphviz)  # the diagram skill
command -v espeak-ng >/dev/null 2>&1 || need+=(espeak-ng)  # the text-to-speech skill
[ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need+=(fonts-dejavu-core)  # image-tools' labels
# the office skills' libraries (skills/public/{slide-deck,word-document,spreadsheet,pdf-report,...})
"$sandbox_python" -c 'import docx, reportlab, pypdf, openpyxl' >/dev/null 2>&1 \
  || need+=(python3-docx python3-reportlab python3-pypdf python3-openpyxl)
pip_need=()
if ! "$sandbox_python" -c 'import pptx' >/dev/null 2>&1; then
  pip_need+=("python-pptx>=1.0,<2")
  need+=(python3-lxml python3-pil python3-xlsxwriter python3-typing-extensions)  # python-pptx's dependencies
  "$sandbox_python" -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
fi
command -v mkfs.btrfs >/dev/null 2>&1 || [ -x /usr/sbin/mkfs.btrfs ] || need+=(btrfs-progs)  # the kernel-enforced disk quota

if [ ${#need[@]} -eq 0 ] && [ ${#pip_need[@]} -eq 0 ]; then
  echo "system packages: all present"
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  [ ${#need[@]} -eq 0 ] || echo "NOTE: missing system packages: ${need[*]}" >&2
  [ ${#need[@]} -eq 0 ] || echo "      install them with your package manager (e.g. sudo apt-get install ${need[*]})." >&2
  [ ${#pip_need[@]} -eq 0 ] || echo "NOTE: the slide-deck skill needs python-pptx for $sandbox_python: sudo $sandbox_python -m pip install --break-system-packages --no-deps '${pip_need[*]}'" >&2
  echo "      Without bubblewrap the sandbox's bash tool is off unless sandbox.allow_unisolated_bash is true." >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if [ ${#need[@]} -gt 0 ]; then
  echo "installing system packages: ${need[*]}"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
if [ ${#pip_need[@]} -gt 0 ]; then
  # --no-deps: its dependencies are Debian's (above); /usr/local/lib/python3.X/dist-packages is on
  # Debian's python3 path and read-only in the jail
  echo "installing for the sandbox's python3 from PyPI: ${pip_need[*]}"
  PIP_BREAK_SYSTEM_PACKAGES=1 PIP_ROOT_USER_ACTION=ignore "$sandbox_python" -m pip install --quiet --no-deps "${pip_need[@]}" \
    || echo "NOTE: pip could not install ${pip_need[*]}; the slide-deck skill will say so when it runs" >&2
fi
