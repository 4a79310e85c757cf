"""The Files view's state and texts (Qt-free): a question answered as ranked files (FileAnswer)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from services.core.files import read_text
from services.core.models import Chunk, FileAnswer, QueryOptions, QueryResult, RankedFile, ResultChunk
from ui.viewmodels.ranking import effect_text, lines_text
from ui.viewmodels.results import one_line

if TYPE_CHECKING:
    from services.engine.protocol import Engine


class FilesViewModel:
    """Asks the engine for files; keeps the answer on screen and the question it answers."""

    def __init__(self, engine: "Engine") -> None:
        self.engine = engine
        self.answer: FileAnswer | None = None
        self.asked: tuple[str, QueryOptions] | None = None  # the question and options of `answer`

    def is_current(self, question: str, options: QueryOptions) -> bool:
        return self.asked == (question, options)

    async def find(self, question: str, options: QueryOptions, max_files: int) -> FileAnswer:
        answer = await self.engine.find_files(question, options, max_files)
        self.answer, self.asked = answer, (question, options)
        return answer


def files_first(result: QueryResult | None) -> bool:
    """Whether the engine is surer of files than of chunks for `result`'s question, so Explore shows the best
    files above the chunks: it read the question as a question (words, or a pasted report), not as a name, a
    dotted name or a path, whose definitions lead the chunk answer already. A question's chunk answer ranks
    passages (documentation that talks about the words first); its file answer (find_files) adds each file's
    whole-file keywords, mentions and history to that evidence and leaves documentation out."""
    return result is not None and result.reading == "question" and bool(result.results or result.original)


STRIP_FILES = 8  # files the Explore tab's strip shows


def strip_text(file: RankedFile) -> str:
    """A file in the Explore tab's strip: its rank, folder and name ("1 _pytest/fixtures.py")."""
    return f"{file.rank} {'/'.join(file.path.split('/')[-2:])}"


def file_tip(file: RankedFile) -> str:
    """A strip file's tooltip: its path, score, best chunks and why (the biggest signals first)."""
    ranked = sorted(file.signals, key=lambda s: -abs(s.contribution))[:4]
    why = " · ".join(f"{s.name} {effect_text(s)}" for s in ranked)
    lines = [file.path, f"#{file.rank}, score {file.score:.2f}"]
    if file.chunks:
        lines.append(f"best: {chunks_text(file)}")
    if why:
        lines.append(f"why: {why}")
    return "\n".join(lines)


def movement_text(file: RankedFile) -> str:
    """How the strategy moved the file against the `none` order: "▲2", "▼1", "" (same), "new"."""
    if file.original_rank is None:
        return "new"
    moved = file.original_rank - file.rank
    return f"▲{moved}" if moved > 0 else f"▼{-moved}" if moved < 0 else ""


def chunks_text(file: RankedFile) -> str:
    return ", ".join(f"{c.symbol or 'lines'} {lines_text(c.start_line, c.end_line)}" for c in file.chunks)


def heading_text(answer: FileAnswer, file: RankedFile) -> str:
    was = f"was #{file.original_rank} without a strategy" if file.original_rank else "not ranked without a strategy"
    return f"Why {file.path} is #{file.rank} ({file.score:.2f}, {was}) with {answer.strategy}:"


def why_cells(signals) -> list[tuple[str, float, str]]:
    """Per signal of a file: (what it does, its bar as a share of the largest addition, the tooltip). A signal that
    sets the score (`auto`'s rank fusion) says "= score", and draws no bar beside the additions."""
    widest = max((abs(s.contribution) for s in signals if s.op == "add"), default=0.0) or 1.0
    cells = []
    for s in signals:
        if s.op == "set":
            cells.append((f"= {s.contribution:.3f}", 0.0, f"{s.name}: sets the score to {s.contribution:.3f}\n{s.note}"))
        else:
            cells.append((f"{s.contribution:+.2f}", s.contribution / widest,
                          f"{s.name}: raw value {s.value:g}, adds {s.contribution:+.3f}\n{s.note}"))
    return cells


def summary_text(answer: FileAnswer) -> str:
    files = f"{len(answer.files)} file{'s' if len(answer.files) != 1 else ''}"
    summary = f"{files} for “{one_line(answer.question)}” with {answer.strategy} · history: {answer.history}"
    return f"Warning: {answer.warning} · {summary}" if answer.warning else summary  # as the chunks' summary says it


def file_preview(workspace: str, file: RankedFile) -> ResultChunk:
    """The file to preview for a ranked file: its text with its best chunk marked (the chunk's lines; the
    whole file as context). A file that cannot be read shows why instead."""
    best = file.chunks[0] if file.chunks else None
    start, end = (best.start_line, best.end_line) if best else (1, 1)
    try:
        text = read_text(Path(workspace) / file.path)
    except (OSError, UnicodeDecodeError) as error:
        text = f"{file.path} cannot be read now: {getattr(error, 'strerror', None) or error}"
        start = end = 1
    lines = text.split("\n")
    content = "\n".join(lines[start - 1:end])
    chunk = Chunk(path=file.path, language="", start_line=start, end_line=end, content=content,
                  symbol=best.symbol if best else "", qualified_name=best.symbol if best else "",
                  kind="file")
    return ResultChunk(chunk, file.rank, file.score, file.original_rank, None, context=text, context_start_line=1)
