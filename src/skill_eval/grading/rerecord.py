"""Stale evidence being re-recorded: an explicit, reviewed, expiring deferral.

A one-sentence SKILL.md edit makes every bundle of that skill (and every trigger bundle)
stale; re-recording them needs a real agent. `<evals>/evidence-rerecord.yaml` lets a
maintainer keep the merge stage green meanwhile, under rules that keep it honest:

- an entry names one moved digest (`skill:<name>`, `corpus`, `harness`, `scenario:<id>`)
  *and the exact current digest* it was written for: any further edit of that content
  makes the entry stale itself (an error), so an approval never covers unseen changes;
- it carries a reason and an expiry date at most MAX_DAYS ahead; an expired entry is an
  error;
- it excuses a bundle only when *every* freshness problem of that bundle is a moved digest
  it covers (a missing digest, a removed entry or an unrouted input is never excused);
- an entry that excuses no bundle is an error (the list can only shrink), and the release
  stage accepts none.
Excused bundles are still listed, as pending, in every summary. The file is committed,
so the deferral is reviewed in the pull request that needs it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from skill_eval.content.config import Config
from skill_eval.core import schemas, strict

FILE = "evidence-rerecord.yaml"
MAX_DAYS = 30


@dataclass(frozen=True)
class Entry:
    """One entry of evidence-rerecord.yaml: a stale digest being re-recorded, why, and until when."""

    key: str
    digest: str
    reason: str
    expires: dt.date


def load(cfg: Config) -> list[Entry]:
    path = cfg.evals_dir / FILE
    if not path.exists() and not path.is_symlink():
        return []
    doc = strict.load_yaml(path)
    for e in (doc.get("rerecord") or []) if isinstance(doc, dict) else []:
        if isinstance(e, dict) and isinstance(e.get("expires"), dt.date):
            e["expires"] = e["expires"].isoformat()  # an unquoted YAML date is still a date
    raw = schemas.validate(doc, "evidence_rerecord", path)
    return [Entry(e["key"], e["digest"], e["reason"], dt.date.fromisoformat(str(e["expires"]))) for e in raw["rerecord"]]


def moved_keys(meta: dict[str, Any], cur: Any) -> set[str]:
    """Digests this bundle recorded that exist now with another value."""
    out = set()
    for key, recorded in (meta.get("digests") or {}).items():
        now = cur.digest(key)
        if now is not None and now != recorded:
            out.add(key)
    return out


class Deferrals:
    """Which stale bundles the committed entries excuse, and the entries' own problems."""

    def __init__(self, cfg: Config, cur: Any, stage: str = "merge", today: dt.date | None = None):
        self.today = today or dt.date.today()
        self.stage = stage
        self.entries = {e.key: e for e in load(cfg)}
        self.cur = cur
        self.used: dict[str, int] = {}

    def _valid(self, e: Entry) -> bool:
        return (self.stage != "release" and e.expires >= self.today
                and (e.expires - self.today).days <= MAX_DAYS and self.cur.digest(e.key) == e.digest)

    def excuses(self, meta: dict[str, Any], problems: list[str]) -> bool:
        """True when every problem of this bundle is a moved digest a valid entry covers."""
        if not problems or not self.entries:
            return False
        moved = moved_keys(meta, self.cur)
        if len(problems) != len(moved) or not all(k in self.entries and self._valid(self.entries[k]) for k in moved):
            return False
        for k in moved:
            self.used[k] = self.used.get(k, 0) + 1
        return True

    def pending_lines(self) -> list[str]:
        return [f"PENDING re-record {k}: {n} stale bundle(s) excused until {self.entries[k].expires} — {self.entries[k].reason}"
                for k, n in sorted(self.used.items())]

    def problems(self) -> list[str]:
        out = []
        for k, e in sorted(self.entries.items()):
            where = f"{FILE}: {k}"
            if self.stage == "release":
                out.append(f"{where}: re-record deferrals are not accepted in the release stage; re-record the evidence")
            elif e.expires < self.today:
                out.append(f"{where}: expired on {e.expires}; re-record the evidence (make eval-risk) or renew it with a reason")
            elif (e.expires - self.today).days > MAX_DAYS:
                out.append(f"{where}: expires {e.expires}, more than {MAX_DAYS} days ahead")
            elif self.cur.digest(k) is None:
                out.append(f"{where}: no such digest any more; remove the entry")
            elif self.cur.digest(k) != e.digest:
                out.append(f"{where}: written for digest {e.digest[:12]}, but the content moved again "
                           f"(now {self.cur.digest(k)[:12]}); review the new change and update the entry")
            elif k not in self.used:
                out.append(f"{where}: excuses no stale bundle (re-recorded?); remove the entry")
        return out


def entries_for(cfg: Config, stale_metas: list[dict[str, Any]], cur: Any, reason: str, days: int,
                today: dt.date | None = None) -> dict[str, Any]:
    """An evidence-rerecord.yaml body covering every digest that moved under the given stale bundles."""
    today = today or dt.date.today()
    keys = sorted({k for m in stale_metas for k in moved_keys(m, cur)})
    until = (today + dt.timedelta(days=min(days, MAX_DAYS))).isoformat()
    return {"schema_version": 1, "rerecord": [{"key": k, "digest": cur.digest(k), "reason": reason, "expires": until}
                                              for k in keys]}
