"""projections/model_table.py and the registry's LazyModel: a catch-up asks a model about an event without
importing it, and gets the answers the model itself gives."""

from __future__ import annotations

import subprocess
import sys

import pytest

from events.catalog import EVENT_TYPES
from projections import passes
from projections.registry import REGISTRY, LazyModel
from tests.helpers import REPO, gen_docs


def test_the_table_is_what_the_models_say_today() -> None:
    """A format bumped or a fold added without running scripts/gen_docs.py fails here."""
    assert (REPO / "projections" / "model_table.py").read_text() == gen_docs().render_model_table(), \
        "run scripts/gen_docs.py"


@pytest.mark.parametrize("name", list(REGISTRY))
def test_a_lazy_model_answers_every_event_type_as_the_model_does(name: str) -> None:
    """For every event type: a fold or none as the real model has, the same `passes` test, the same format."""
    lazy = REGISTRY[name]
    assert isinstance(lazy, LazyModel)
    fresh = LazyModel(name, lazy._module, lazy.format, lazy._folds)  # nothing asked of it yet: nothing imported
    real = lazy.real
    assert fresh.format == real.format and fresh.name == real.name
    for event_type in EVENT_TYPES:
        fold, test = fresh.entry_for(event_type)
        real_fold, real_test = real.entry_for(event_type)
        assert (fold is None) == (real_fold is None), (name, event_type)
        assert test is real_test, (name, event_type)


def test_light_passes_live_where_a_catch_up_finds_them_without_the_model() -> None:
    """Every test the table names is in projections/passes.py (a model's own module would have to be imported)."""
    from projections.model_table import MODELS

    named = {test for _, folds in MODELS.values() if folds for test in folds.values() if test}
    assert named == {"no_run_files", "no_run", "no_identity"}
    assert all(callable(getattr(passes, test)) for test in named)


def python_says(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode == 0, done.stderr[-800:]
    return done.stdout.strip()


def test_events_a_model_does_not_fold_or_passes_over_leave_its_module_unimported() -> None:
    """In a new interpreter: the team and tasks models answer for a work log without their modules; an event they
    fold imports them, and the tasks fold reached through the light test folds as the model does."""
    code = (
        "import sys\n"
        "from projections.registry import REGISTRY\n"
        "from projections.readmodel import Projects\n"
        "from events.worklog import WorkLogged\n"
        "from events.base import Refs\n"
        "team, tasks = REGISTRY['team'], REGISTRY['tasks']\n"
        "plain = WorkLogged(project='demo', message='m')\n"
        "assert team.entry_for(WorkLogged) == (None, None) and not team.changes(plain)\n"
        "assert not tasks.changes(plain)\n"
        "state = tasks.apply(tasks.empty(), 'n1', plain)\n"
        "assert state.projects == {} and state.events_folded == 1\n"
        "print(sorted(m for m in ('projections.team', 'projections.tasks') if m in sys.modules))\n"
        "from events.task import RunStarted\n"
        "state = tasks.apply(state, 'n2', RunStarted(project='demo', run_id='r1', task_id='t1'))\n"
        "edit = WorkLogged(project='demo', message='m', run_id='r1', refs=Refs(files=('a.py',)))\n"
        "assert tasks.changes(edit)\n"
        "state = tasks.apply(state, 'n3', edit)\n"
        "print(state.projects['demo'].runs['r1'].files)\n"
    )
    assert python_says(code).splitlines() == ["[]", "['a.py']"]


def test_a_kind_the_catalog_does_not_hold_goes_where_the_model_sends_it() -> None:
    """An event class no catalog lists (a test's, a later release's upcast): a model with a catch-all fold sends it
    there (the tasks model, through its light test), one without passes it over, as the models themselves do."""
    from events.base import Event

    class Odd(Event, frozen=True, kw_only=True, tag="test.odd"):
        pass

    for name in ("tasks", "team", "workstreams"):
        lazy = REGISTRY[name]
        assert isinstance(lazy, LazyModel)
        fresh = LazyModel(name, lazy._module, lazy.format, lazy._folds)
        fold, test = fresh.entry_for(Odd)
        real_fold, real_test = lazy.real.entry_for(Odd)
        assert (fold is None) == (real_fold is None) and test is real_test, name
    assert REGISTRY["tasks"].entry_for(Odd)[1] is passes.no_run_files


def test_the_kind_table_is_the_catalog_today() -> None:
    """A kind added, moved or versioned without running scripts/gen_docs.py fails here."""
    assert (REPO / "events" / "kind_table.py").read_text() == gen_docs().render_kind_table(), \
        "run scripts/gen_docs.py"


def test_the_codec_from_the_kind_table_reads_as_the_codec_from_the_catalog() -> None:
    """Types, versions and order as the catalog gives them; a kind not in the table is not known."""
    from events.base import kind_of
    from events.codec import Codec, seed004_legacy
    from events.kind_table import KINDS

    lazy, eager = Codec(table=KINDS, legacy=seed004_legacy), Codec(EVENT_TYPES, legacy=seed004_legacy)
    assert lazy.current == eager.current and list(lazy.by_kind) == [kind_of(t) for t in EVENT_TYPES]
    assert lazy.types == EVENT_TYPES and all(lazy.by_kind[kind] is eager.by_kind[kind] for kind in eager.by_kind)
    assert lazy.decoder_of("no.such") is None and lazy.by_kind.get("no.such") is None
    assert lazy.schema() == eager.schema()


def test_the_default_codec_imports_an_event_family_only_when_it_meets_one() -> None:
    """In a new interpreter: decoding a work log loads no task, team, workstream or handoff Structs; a task event
    loads its module."""
    code = (
        "import sys\n"
        "from events.codec import default_codec\n"
        "from events.worklog import WorkLogged\n"
        "codec = default_codec()\n"
        "raw = codec.encode(WorkLogged(project='p', message='m'))\n"
        "assert codec.decode(raw).message == 'm'\n"
        "families = ('events.task', 'events.team', 'events.workstream', 'events.handoff', 'events.moments')\n"
        "print(sorted(m for m in families if m in sys.modules))\n"
        "from events.task import TaskCreated\n"
        "assert type(codec.decode(codec.encode(TaskCreated(project='p', task_id='t1', title='x')))) is TaskCreated\n"
        "print('events.catalog' in sys.modules)\n"
    )
    assert python_says(code).splitlines() == ["[]", "False"]
