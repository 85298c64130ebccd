"""Stored responses for `previous_response_id`: an embedded SQLite database worked by one thread.

Each stored response is one row written in one transaction (the response JSON, its own input
items, and the whole conversation a follow-up continues from), so a crash loses at most the
response being written. Every call runs on the store's own thread: the event loop never waits on
the disk. The store is bounded by size and age; the oldest rows go first.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    created_at REAL NOT NULL,
    size INTEGER NOT NULL,
    response BLOB NOT NULL,
    input BLOB NOT NULL,
    conversation BLOB NOT NULL
)"""


def default_store_path() -> Path:
    return Path.home() / ".cache" / "agent-gateway" / "responses.sqlite3"


@dataclass(frozen=True, slots=True)
class StoredResponse:
    response: bytes  # the Response object's JSON
    input: bytes  # the request's own input items (JSON list, each with an id)
    conversation: bytes  # every item a follow-up continues from: earlier turns, this input, this output


class ResponseStore:
    """Opened by the app at startup (`open`), closed at cleanup; the Responses routes call the rest.
    `path` is a file or `:memory:`; `max_bytes` bounds the rows' sizes, `max_age_s` their age."""

    def __init__(self, path: str, max_bytes: int, max_age_s: float | None = None) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.max_age_s = max_age_s
        self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="response-store")
        self._db: sqlite3.Connection | None = None
        self._num_bytes = 0

    async def _run(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self._thread, fn, *args)

    async def open(self) -> None:
        await self._run(self._open)

    async def close(self) -> None:
        await self._run(self._close)
        self._thread.shutdown(wait=True)

    async def save(self, response_id: str, item: StoredResponse) -> None:
        await self._run(self._save, response_id, item)

    async def get(self, response_id: str) -> StoredResponse | None:
        return await self._run(self._get, response_id)

    async def delete(self, response_id: str) -> bool:
        return await self._run(self._delete, response_id)

    async def ids(self) -> list[str]:
        """Every stored id, oldest first (for tests and tools)."""
        return await self._run(lambda: [row[0] for row in self._db.execute("SELECT id FROM responses ORDER BY seq")])

    # --- on the store's thread -----------------------------------------------------------

    def _open(self) -> None:
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(_SCHEMA)
        self._db = db
        self._num_bytes = db.execute("SELECT COALESCE(SUM(size), 0) FROM responses").fetchone()[0]

    def _close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _save(self, response_id: str, item: StoredResponse) -> None:
        size = len(item.response) + len(item.input) + len(item.conversation)
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            old = db.execute("SELECT size FROM responses WHERE id = ?", (response_id,)).fetchone()
            db.execute("INSERT OR REPLACE INTO responses (id, created_at, size, response, input, conversation) "
                       "VALUES (?, ?, ?, ?, ?, ?)",
                       (response_id, time.time(), size, item.response, item.input, item.conversation))  # fmt: skip
            self._num_bytes += size - (old[0] if old else 0)
            self._evict()
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            self._num_bytes = db.execute("SELECT COALESCE(SUM(size), 0) FROM responses").fetchone()[0]
            raise

    def _evict(self) -> None:
        """Oldest rows first: those past the age limit, then as many as the size limit needs."""
        db = self._db
        if self.max_age_s is not None:
            db.execute("DELETE FROM responses WHERE created_at < ?", (time.time() - self.max_age_s,))
            self._num_bytes = db.execute("SELECT COALESCE(SUM(size), 0) FROM responses").fetchone()[0]
        excess = self._num_bytes - self.max_bytes
        if excess <= 0:
            return
        last_seq, freed = None, 0
        for seq, size in db.execute("SELECT seq, size FROM responses ORDER BY seq").fetchall():
            last_seq, freed = seq, freed + size
            if freed >= excess:
                break
        db.execute("DELETE FROM responses WHERE seq <= ?", (last_seq,))
        self._num_bytes -= freed

    def _get(self, response_id: str) -> StoredResponse | None:
        row = self._db.execute("SELECT response, input, conversation FROM responses WHERE id = ?",
                               (response_id,)).fetchone()  # fmt: skip
        return StoredResponse(*row) if row else None

    def _delete(self, response_id: str) -> bool:
        cursor = self._db.execute("DELETE FROM responses WHERE id = ?", (response_id,))
        if cursor.rowcount:
            self._num_bytes = self._db.execute("SELECT COALESCE(SUM(size), 0) FROM responses").fetchone()[0]
        return cursor.rowcount > 0
