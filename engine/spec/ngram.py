"""N-gram prompt lookup: propose what followed the latest earlier occurrence of the request's last n tokens."""

from __future__ import annotations

from dataclasses import dataclass, field

MIN_NGRAM = 2
MAX_NGRAM = 5


@dataclass(slots=True)
class NgramIndex:
    """n-gram -> the position just after its latest occurrence, for n in [MIN_NGRAM, MAX_NGRAM].

    Grown incrementally as the request's known tokens grow (drafts never enter it), so a
    lookup costs one dict probe per n however long the request is.
    """

    maps: dict[int, dict[tuple[int, ...], int]] = field(default_factory=lambda: {n: {} for n in range(MIN_NGRAM, MAX_NGRAM + 1)})
    num_indexed: int = 1  # n-grams ending before position num_indexed are in the maps

    def extend(self, token_ids: list[int]) -> None:
        for end in range(self.num_indexed, len(token_ids)):  # token_ids[end] continues the n-gram ending there
            for n, table in self.maps.items():
                if end >= n:
                    table[tuple(token_ids[end - n : end])] = end
        self.num_indexed = max(self.num_indexed, len(token_ids))

    def lookup(self, token_ids: list[int], max_tokens: int) -> list[int]:
        """Up to max_tokens proposed after token_ids (which `extend` has indexed), longest match first."""
        self.extend(token_ids)
        size = len(token_ids)
        for n in range(MAX_NGRAM, MIN_NGRAM - 1, -1):
            if size > n:
                start = self.maps[n].get(tuple(token_ids[size - n :]))
                if start is not None:
                    return token_ids[start : start + max_tokens]
        return []


class NgramProposer:
    """Owned by the Speculator; one index per live request, dropped when the request leaves."""

    def __init__(self) -> None:
        self.indexes: dict[str, NgramIndex] = {}

    def lookup(self, request_id: str, token_ids: list[int], max_tokens: int) -> list[int]:
        if max_tokens <= 0:
            return []
        index = self.indexes.get(request_id)
        if index is None:
            index = self.indexes[request_id] = NgramIndex()
        return index.lookup(token_ids, max_tokens)

    def remove(self, request_id: str) -> None:
        self.indexes.pop(request_id, None)
