"""After a run that worked, propose a skill from it (``skills.learning``), in the background.

A run is learned from when it ended ``success`` with nothing left undone
(:func:`~herdsman.runtime.runs.run_outcome.run_outcome`: no limit hit, no failed model call, no
deliverable missing, no failed work left by the completion check), was not waiting on the user
(an interrupt), and did not follow a skill already (``active_skill``: it would propose the same
skill again). The proposal is drafted from the thread's values by
:class:`~herdsman.skills.learning.store.ProposalStore` (no model call), on the files pool, after the
run's answer went out: the gateway hears the run's end as a :class:`RunListener`; the embedded client
starts it after the run's last event and waits for it when it closes.

A failure here is logged and never reaches the run or the user's next message.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine, Mapping
from typing import Any

from herdsman import pools
from herdsman.config.schema import HerdsmanConfig
from herdsman.logs import get_logger
from herdsman.runtime.runs.run_outcome import run_outcome
from herdsman.runtime.runs.run_types import Run
from herdsman.skills.activation import last_user_message, skill_command
from herdsman.skills.learning.guard import known_secrets
from herdsman.skills.learning.store import Proposal, ProposalStore
from herdsman.skills.learning.trace import read_trace
from herdsman.skills.secrets import SkillSecrets

log = get_logger(__name__)


class SkillLearner:
    """Drafts and keeps a proposal after a run that worked (see the module docstring)."""

    def __init__(self, config: HerdsmanConfig, store: ProposalStore | None = None) -> None:
        """``store`` defaults to ``config``'s (``skills.learning.path``)."""
        self.config = config
        self.store = store or ProposalStore.of(config)
        self._tasks: set[asyncio.Task[Any]] = set()

    @staticmethod
    def worth_learning(values: Mapping[str, Any]) -> bool:
        """Whether the thread's values after a run are those of a run to learn from."""
        messages = values.get("messages") or []
        if not messages or values.get("active_skill") or not run_outcome(values).ok:
            return False
        user = last_user_message(messages)
        return user is not None and skill_command(user.text) is None

    def propose(self, values: Mapping[str, Any], user: str | None, thread_id: str | None) -> Proposal | None:
        """Draft and keep ``user``'s proposal from ``values`` when the run is worth it (blocking)."""
        if not self.worth_learning(values):
            return None
        trace = read_trace(values.get("messages") or [])
        if trace is None:
            return None
        secrets = known_secrets(os.environ, SkillSecrets.of(self.config).load(user))
        return self.store.propose(
            user, trace, secrets, thread_id=thread_id, min_steps=self.config.skills.learning.min_steps
        )

    async def propose_later(self, values: Mapping[str, Any], user: str | None, thread_id: str | None) -> None:
        """:meth:`propose` on the files pool; a failure is logged, never raised."""
        try:
            await pools.run(pools.FILES, user, self.propose, values, user, thread_id)
        except Exception as exc:  # noqa: BLE001 - a proposal is never worth a failed run or a lost log line more
            log.warning("skill_proposal_failed", thread_id=thread_id, error=str(exc))

    def start(self, values: Mapping[str, Any], user: str | None, thread_id: str | None) -> None:
        """Propose in the background (the caller goes on at once)."""
        self.in_background(self.propose_later(values, user, thread_id))

    def in_background(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` as a task that :meth:`wait` waits for."""
        task = asyncio.get_running_loop().create_task(work, name="skill-proposal")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def wait(self) -> None:
        """Wait for the proposals under way (before the process ends)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)


class SkillLearningListener:
    """The gateway's hook: a :class:`~herdsman.runtime.runs.run_types.RunListener` that reads a
    finished run's thread and proposes from it."""

    def __init__(self, learner: SkillLearner, graph: Any) -> None:
        """``graph``: the lead graph the runs ran on (its checkpointer holds the thread)."""
        self.learner = learner
        self.graph = graph

    async def _learn(self, run: Run) -> None:
        try:
            state = await self.graph.aget_state({"configurable": {"thread_id": run.thread_id}})
        except Exception as exc:  # noqa: BLE001 - a temporary thread may be gone already
            log.info("skill_proposal_skipped", thread_id=run.thread_id, why=str(exc))
            return
        if state.next or state.interrupts:
            return  # waiting on the user: not done
        await self.learner.propose_later(state.values, run.spec.user, run.thread_id)

    def run_started(self, run: Run) -> None:
        """Nothing to do."""

    def run_finished(self, run: Run, seconds: float) -> None:
        """A run that ended ``success`` is read, and maybe proposed from, in the background."""
        if run.status != "success" or run.spec.temporary:
            return
        self.learner.in_background(self._learn(run))

    def model_tokens(self, run: Run, model: str, input_tokens: int, output_tokens: int) -> None:
        """Nothing to do."""

    def tool_finished(self, run: Run, tool: str, failed: bool) -> None:
        """Nothing to do."""

    def subagent_finished(self, run: Run, outcome: str) -> None:
        """Nothing to do."""
