"""Run mode: the user's code run as a program, its output sent to the page while it runs.

The readings run the code as ``__playground__`` on every edit (``topos.playground.run``).
Run mode runs it once, as ``__main__``, so that a script's ``if __name__ == "__main__":``
block (a training run) runs too, for as long as it takes. What it prints, the cards it
makes, the cards it changes (``card.update(...)``: a loss curve that grows) and the steps
it reports (``show.progress(step, total)``) go to the page in batches as they come
(``OutputStream``), each batch one JSON text:

    {"append": [output items], "changed": [[card number, card], ...], "progress": {...} or null}

- ``append``: printed text (``{"kind": "print", "text": ...}``, whole lines only: a
  line shows once it ends, as in a terminal) and new cards, in order. Cards are
  numbered from 0 in the order they are appended.
- ``changed``: cards appended before that have changed since, each as it is now.
- ``progress``: the newest step reported, ``{"step", "total", "seconds"}``
  (``seconds`` since the run started, when the step was reported).

New output goes at most every ``APPEND_INTERVAL`` seconds, changed cards and progress at
most every ``CHANGE_INTERVAL``, so that a script that prints or plots in a tight loop
neither floods the page nor spends its time serialising. Output held back is sent when
it is due: by the script's next print, card or step, or by the timer the caller hands
in, which raises a signal once the held output is due (the browser's run worker makes
one from Pyodide's interrupt buffer); without a timer, by the end of the run at the latest.
"""

import contextlib
import io
import json
import math
import signal
import time

from .. import show
from ..errors import ArgumentTypeError
from .output import MAX_OUTPUT_CHARACTERS, finite
from .sandbox import FILENAME, describe_error, fresh_module

#: Seconds between two batches of new output (printed lines and new cards).
APPEND_INTERVAL = 0.05
#: Seconds between two batches of changed cards and progress: at most ten a second.
CHANGE_INTERVAL = 0.1
#: What ``OutputStream.timer_due`` holds once the timer has gone off: equal to no time, so that
#: the next flush tells the timer to start or to stop whatever it holds then.
WENT_OFF = "went off"


def run_program(code, post, timer=None, filename=FILENAME, limit=MAX_OUTPUT_CHARACTERS):
    """Run ``code`` as ``__main__``, sending its output to ``post`` (one JSON text a batch) as it comes.

    ``timer``, when given, has ``signal`` (a signal number), ``start(milliseconds)``
    (raise that signal once, that long from now) and ``stop()``: it sends held output
    when it is due while the script is busy elsewhere. Printed output past ``limit``
    characters is left out (one line says so). Returns the end of the run as JSON text:
    ``{"error": the error as the page shows it, or null, "seconds": the run's length}``.
    ``SystemExit`` with no code or code 0 is a normal end.
    """
    stream = OutputStream(post, timer, limit)
    error = None
    try:
        with (
            stream.woken_by_timer(),
            fresh_module("__main__", code, filename) as module,
            show.watch(stream),
            contextlib.redirect_stdout(stream),
            contextlib.redirect_stderr(stream),
        ):
            exec(compile(code, filename, "exec"), module.__dict__)
    except MemoryError:
        raise  # the worker is replaced: Pyodide's heap is not to be trusted afterwards
    except SystemExit as exited:
        if exited.code not in (None, 0):
            error = exited
    except BaseException as caught:  # noqa: BLE001  (user code may raise anything)
        error = caught
    stream.finish()
    return json.dumps(
        {
            "error": describe_error(error, filename) if error is not None else None,
            "seconds": round(stream.seconds(), 3),
        }
    )


class OutputStream(io.TextIOBase):
    """A run's output, sent in batches as it comes: the script's stdout and stderr, and a ``show`` watcher.

    ``post(text)`` sends one batch (JSON text, see this module's doc). Printed text
    and new cards wait in ``appended``, in order; changed cards in ``changed``, by
    number. ``flush()`` sends what is due; ``finish()`` sends the rest.
    """

    def __init__(self, post, timer=None, limit=MAX_OUTPUT_CHARACTERS, clock=time.monotonic):
        self.post = post
        self.timer = timer
        self.limit = limit
        self.clock = clock
        self.started = clock()
        self.appended = []
        self.changed = {}
        self.progress_report = None
        #: Each card made so far, by its id: its number and the card (kept, so that no new card takes the id).
        self.cards = {}
        self.characters = 0
        self.cut = False
        # Far in the past: the first batch of each kind goes at once.
        self.appended_at = self.changed_at = float("-inf")
        self.timer_due = None
        self.busy = False
        self.woken_while_busy = False

    def seconds(self):
        return self.clock() - self.started

    # The script's stdout and stderr ----------------------------------------------------------

    def write(self, text):
        if not isinstance(text, str):
            raise ArgumentTypeError(f"write() argument must be str, not {type(text).__name__}")
        kept = text[: max(self.limit - self.characters, 0)]
        self.characters += len(kept)
        with self.exclusive():
            if kept:
                self._append_text(kept)
            if len(kept) < len(text) and not self.cut:
                self.cut = True
                self._append_text(f"\n… output cut here: printed output past {self.limit:,} characters is not shown\n")
        self.flush()
        return len(text)

    def flush(self, final=False):
        """Send what is due (everything, when ``final``); set the timer for what is held."""
        with self.exclusive():
            now = self.clock()
            batch = {"append": [], "changed": [], "progress": None}
            if self.appended and (final or now - self.appended_at >= APPEND_INTERVAL):
                batch["append"] = self._take_appended(final)
                if batch["append"]:
                    self.appended_at = now
            if (self.changed or self.progress_report) and (final or now - self.changed_at >= CHANGE_INTERVAL):
                batch["changed"] = [[number, card.to_json()] for number, card in self.changed.items()]
                batch["progress"] = self.progress_report
                self.changed = {}
                self.progress_report = None
                self.changed_at = now
            if batch["append"] or batch["changed"] or batch["progress"]:
                self.post(_json(batch))
            self._set_timer(now)

    def writable(self):
        return True

    def close(self):
        """The script cannot close the page's output: this does nothing."""

    # The show watcher ----------------------------------------------------------------------------

    def card(self, card):
        with self.exclusive():
            known = self.cards.get(id(card))
            if known is None:
                self.cards[id(card)] = (len(self.cards), card)
                self.appended.append(card)
            elif not any(item is card for item in self.appended):
                # (A card still waiting to be appended goes as it is then: no change to send.)
                self.changed[known[0]] = card
        self.flush()

    def progress(self, step, total):
        self.progress_report = {"step": step, "total": total, "seconds": round(self.seconds(), 3)}
        self.flush()

    def finish(self):
        """Send everything held, and stop the timer."""
        self.flush(final=True)

    # Held output, and the timer that sends it when it is due ---------------------------------------

    @contextlib.contextmanager
    def woken_by_timer(self):
        """While the block runs, the timer's signal sends the output that is due."""
        if self.timer is None:
            yield
            return
        previous = signal.signal(self.timer.signal, self._wake)
        try:
            yield
        finally:
            self.timer.stop()
            signal.signal(self.timer.signal, previous)

    def _wake(self, signum, frame):
        # A signal handler runs between any two bytecodes, maybe in the middle of this stream's own work.
        self.timer_due = WENT_OFF
        if self.busy:
            self.woken_while_busy = True
        else:
            self.flush()

    @contextlib.contextmanager
    def exclusive(self):
        """The stream's lists change only inside this block; a timer signal meanwhile waits for its end."""
        if self.busy:
            yield
            return
        self.busy = True
        try:
            yield
        finally:
            self.busy = False
        if self.woken_while_busy:
            self.woken_while_busy = False
            self.flush()

    def _set_timer(self, now):
        """Have the timer go off when the held output is due (text waits for the end of its line, not for the timer)."""
        if self.timer is None:
            return
        waits = []
        appendable = len(self.appended) > 1 or (
            self.appended and (not isinstance(self.appended[0], str) or "\n" in self.appended[0])
        )
        if appendable:
            waits.append(self.appended_at + APPEND_INTERVAL)
        if self.changed or self.progress_report:
            waits.append(self.changed_at + CHANGE_INTERVAL)
        due = min(waits, default=None)
        if due == self.timer_due:
            return
        self.timer_due = due
        if due is None:
            self.timer.stop()
        else:
            self.timer.start(max(1, math.ceil((due - now) * 1000)))

    # The batches -------------------------------------------------------------------------------------

    def _append_text(self, text):
        if self.appended and isinstance(self.appended[-1], str):
            self.appended[-1] += text
        else:
            self.appended.append(text)

    def _take_appended(self, final):
        """The items waiting to be appended, as JSON; but for the end of the run, a last line of text waits for its end."""
        items = self.appended
        self.appended = []
        if not final and isinstance(items[-1], str) and not items[-1].endswith("\n"):
            whole, newline, rest = items[-1].rpartition("\n")
            self.appended.append(rest)
            if whole or newline:
                items[-1] = whole + newline
            else:
                items.pop()
        return [{"kind": "print", "text": item} if isinstance(item, str) else item.to_json() for item in items]


def _json(batch):
    try:
        return json.dumps(batch, allow_nan=False, default=str)
    except ValueError:
        # JSON has no NaN or infinity (a card's attribute may hold one): spell them as text.
        return json.dumps(finite(batch), allow_nan=False, default=str)
