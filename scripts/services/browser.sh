# Sourced by scripts/test. The browser tests (tests/browser) drive Debian's
# Chromium through Playwright's Python API (its wheel ships the driver; no
# browser is ever downloaded). Installs the browser with apt when it is missing,
# exports HITL_TEST_CHROMIUM for the tests and HITL_TEST_ARTIFACTS for their
# screenshots. Under CI=true a browser that is still missing fails those tests
# (tests/browser/conftest.py), it never skips them.
if [ -z "${HITL_TEST_CHROMIUM:-}" ] && [ ! -x /usr/bin/chromium ]; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        echo "browser.sh: installing chromium with apt-get" >&2
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/dev/null 2>&1 \
            || echo "browser.sh: apt-get install chromium failed" >&2
    else
        echo "browser.sh: no /usr/bin/chromium and no root apt-get to install it" >&2
    fi
fi
if [ -z "${HITL_TEST_CHROMIUM:-}" ] && [ -x /usr/bin/chromium ]; then
    export HITL_TEST_CHROMIUM=/usr/bin/chromium
fi
export HITL_TEST_ARTIFACTS="${HITL_TEST_ARTIFACTS:-$PWD/test-artifacts/browser}"
mkdir -p "$HITL_TEST_ARTIFACTS"
