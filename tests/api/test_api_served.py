"""The API through the real ``hitl serve`` command: a service token from
hitl.toml answers a demo interrupt, and ``hitl audit`` names the token."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from tests.browser.served import HASHER, hitl_bin, request, serve

TOKEN = "runbook-token-0b7c"


def test_a_token_from_hitl_toml_answers_and_the_audit_names_it(demo_db: Path, tmp_path: Path) -> None:
    store = tmp_path / "store.sqlite"
    shutil.copy(demo_db, store)
    config = tmp_path / "hitl.toml"
    config.write_text(f'[serve.operators.ticketing]\nrole = "operator"\ntoken_hash = "{HASHER.hash(TOKEN)}"\n',
                      encoding="utf-8")
    auth = {"Authorization": f"Bearer ticketing:{TOKEN}", "Content-Type": "application/json"}
    with serve(store, "--config", str(config), cwd=tmp_path) as served:
        status, _, body = request(served.url + "/api/v1/sessions/refund-waiting-1")
        assert status == 401 and json.loads(body)["error"]["code"] == "unauthorized"
        data = json.dumps({"answers": {"finance-order-1001": {"approved": True}}, "reason": "ticket 42"}).encode()
        status, _, body = request(served.url + "/api/v1/sessions/refund-waiting-1/answer", data=data, headers=auth)
        assert status == 200, body
        assert json.loads(body)["open"] == ["risk-order-1001"]
    assert TOKEN not in served.log()
    done = subprocess.run([hitl_bin(), "--db", str(store), "--json", "audit", "--session", "refund-waiting-1"],
                          capture_output=True, text=True, timeout=120, check=True)
    row = json.loads(done.stdout)["audit"][0]
    assert (row["operator"], row["reason"], row["details"]["ids"]) == ("ticketing", "ticket 42", ["finance-order-1001"])
