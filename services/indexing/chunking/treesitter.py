"""Find definitions (functions, methods, types) in a syntax tree built with tree-sitter."""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from functools import lru_cache

from services.indexing.chunking.languages import (
    ATTRIBUTE_NODES, BASE_CLAUSES, COMMENT_NODES, CONTAINER_NODES, FUNCTION_NODES, GRAMMARS,
    NOT_BASES, TYPE_NAMES, WRAPPERS,
)

DOCSTRING_CHARS = 300
_GENERICS = re.compile(r"<[^<>]*>|\[[^\[\]]*\]|\([^()]*\)")
_COMMENT_MARKERS = re.compile(r"^\s*(?:/\*\*?|\*/|\*(?!/)|///?!?|#+|--)\s?")
_XML_TAGS = re.compile(r"</?[A-Za-z][^>]*>")


@dataclass
class Definition:
    kind: str
    symbol: str
    qualified_name: str
    start_row: int  # 0-based, inclusive (includes decorators and the leading doc comment)
    end_row: int  # 0-based, inclusive
    bases: tuple[str, ...] = ()
    docstring: str = ""
    members: list["Definition"] = field(default_factory=list)  # direct member definitions

    @property
    def is_container(self) -> bool:
        return self.kind not in ("function", "method")


@lru_cache(maxsize=None)
def parser_for(language: str):
    """A tree-sitter parser, or None when the language has no grammar."""
    grammar = GRAMMARS.get(language)
    if grammar is None:
        return None
    from tree_sitter_language_pack import get_parser

    return get_parser(grammar)


def has_grammar(language: str) -> bool:
    return language in GRAMMARS


def find_definitions(source: bytes, language: str) -> list[Definition]:
    """Top-level definitions of the file, each with its nested members."""
    tree = parser_for(language).parse(source)
    finder = _Finder(language)
    return finder.walk(tree.root_node, [], None)


class _Finder:
    def __init__(self, language: str) -> None:
        self.language = language
        self.functions = FUNCTION_NODES[language]
        self.containers = CONTAINER_NODES[language]

    def walk(self, node, prefix: list[str], container: Definition | None) -> list[Definition]:
        found: list[Definition] = []
        for child in node.named_children:
            definition = self.define(child, prefix, container)
            if definition is not None:
                found.append(definition)
            elif child.type not in self.functions:
                found.extend(self.walk(child, prefix, container))
        return found

    def define(self, node, prefix: list[str], container: Definition | None) -> Definition | None:
        if node.type in self.functions:
            return self._function(node, prefix, container)
        if node.type in self.containers:
            return self._container(node, prefix)
        if node.type == "variable_declarator" and self.language in ("javascript", "typescript", "tsx"):
            value = node.child_by_field_name("value")
            if value is not None and value.type in ("arrow_function", "function_expression", "function"):
                return self._function(node, prefix, container)
        return None

    def _function(self, node, prefix, container) -> Definition | None:
        name = _name_of(node, self.language)
        if not name:
            return None
        owner = list(prefix)
        if self.language == "go" and node.type == "method_declaration":
            owner = [_go_receiver(node)] if _go_receiver(node) else owner
        kind = "method" if owner or container is not None else "function"
        start, end = self._span(node)
        return Definition(kind, name, ".".join([*owner, name]), start, end,
                          docstring=self._docstring(node))

    def _container(self, node, prefix) -> Definition | None:
        kind = self.containers[node.type] or _container_kind(node, self.language)
        if kind is None or not _has_body(node, self.language):
            return None
        name = _name_of(node, self.language)
        if not name:
            return None
        start, end = self._span(node)
        definition = Definition(kind, name, ".".join([*prefix, name]), start, end,
                                bases=_bases_of(node, self.language), docstring=self._docstring(node))
        definition.members = self.walk(node, [*prefix, name], definition)
        return definition

    def _span(self, node) -> tuple[int, int]:
        outer = _outer(node)
        start = outer.start_point[0]
        comments = _leading_comments(outer)
        if comments and self.language != "python":
            start = comments[0].start_point[0]
        return start, outer.end_point[0]

    def _docstring(self, node) -> str:
        if self.language == "python":
            return _python_docstring(node)
        comments = _leading_comments(_outer(node))
        text = "\n".join(_clean_comment(c.text.decode("utf-8", "replace")) for c in comments)
        if not text.strip() and self.language == "ruby":
            return ""
        return _shorten(text)


def _outer(node):
    while node.parent is not None and node.parent.type in WRAPPERS:
        if node.parent.type == "type_declaration" and len(node.parent.named_children) > 1:
            break
        node = node.parent
    return node


def _leading_comments(node) -> list:
    comments: list = []
    expected = node.start_point[0]
    sibling = node.prev_named_sibling
    while sibling is not None and sibling.type in ATTRIBUTE_NODES:
        expected = sibling.start_point[0]
        sibling = sibling.prev_named_sibling
    while sibling is not None and sibling.type in COMMENT_NODES and sibling.end_point[0] >= expected - 1:
        if sibling.end_point[0] == sibling.start_point[0] == node.start_point[0]:
            break  # a trailing comment of the previous line's code
        comments.insert(0, sibling)
        expected = sibling.start_point[0]
        sibling = sibling.prev_named_sibling
    if comments and comments[0].prev_named_sibling is not None:
        previous = comments[0].prev_named_sibling
        if previous.end_point[0] == comments[0].start_point[0]:
            comments.pop(0)  # trailing comment of the previous statement
    return comments


def _clean_comment(text: str) -> str:
    lines = []
    for line in text.splitlines():
        line = _COMMENT_MARKERS.sub("", line).rstrip()
        line = re.sub(r"\s*\*/\s*$", "", line)
        line = _XML_TAGS.sub("", line).strip()
        if line:
            lines.append(line)
    return "\n".join(lines)


def _shorten(text: str) -> str:
    text = text.strip()
    return text if len(text) <= DOCSTRING_CHARS else text[: DOCSTRING_CHARS - 1].rstrip() + "…"


def _python_docstring(node) -> str:
    body = node.child_by_field_name("body")
    if body is None or not body.named_children:
        return ""
    string = body.named_children[0]
    if string.type == "expression_statement" and string.named_children:
        string = string.named_children[0]
    if string.type != "string":
        return ""
    raw = string.text.decode("utf-8", "replace").lstrip("rRbBuUfF")
    for quote in ('"""', "'''", '"', "'"):
        if raw.startswith(quote) and raw.endswith(quote) and len(raw) >= 2 * len(quote):
            raw = raw[len(quote): -len(quote)]
            break
    return _shorten(inspect.cleandoc(raw))


def _text(node) -> str:
    return node.text.decode("utf-8", "replace") if node is not None else ""


def _clean_type(text: str) -> str:
    """'pkg.Comparable<T>' -> 'Comparable'; 'Base()' -> 'Base'."""
    text = text.strip()
    previous = None
    while previous != text:
        previous = text
        text = _GENERICS.sub("", text)
    text = text.strip().lstrip("*&").strip()
    for separator in ("::", ".", "\\"):
        text = text.rsplit(separator, 1)[-1]
    return text.strip()


def _name_of(node, language: str) -> str:
    if node.type in ("function_definition",) and language in ("c", "cpp"):
        return _c_function_name(node)
    if language == "rust" and node.type == "impl_item":
        return _clean_type(_text(node.child_by_field_name("type")))
    name = node.child_by_field_name("name")
    if name is None:
        for child in node.named_children:
            if child.type in ("type_identifier", "simple_identifier", "identifier", "constant"):
                name = child
                break
    if name is None:
        return "init" if node.type == "init_declaration" else ""
    return _clean_type(_text(name))


def _c_function_name(node) -> str:
    declarator = node.child_by_field_name("declarator")
    while declarator is not None:
        if declarator.type in ("identifier", "field_identifier", "qualified_identifier",
                               "operator_name", "destructor_name"):
            return _clean_type(_text(declarator))
        declarator = declarator.child_by_field_name("declarator")
    return ""


def _go_receiver(node) -> str:
    receiver = node.child_by_field_name("receiver")
    if receiver is None:
        return ""
    for parameter in receiver.named_children:
        kind = parameter.child_by_field_name("type")
        if kind is not None:
            return _clean_type(_text(kind))
    return ""


def _keyword(node) -> str:
    for child in node.children:
        if not child.is_named:
            return child.type
    return ""


def _container_kind(node, language: str) -> str | None:
    if language == "go":  # type_spec
        kind = node.child_by_field_name("type")
        return {"struct_type": "struct", "interface_type": "interface"}.get(kind.type if kind else "")
    keywords = {child.type for child in node.children if not child.is_named}
    if language == "swift":
        for keyword, kind in (("struct", "struct"), ("enum", "enum"), ("extension", "class"),
                              ("actor", "class"), ("class", "class")):
            if keyword in keywords:
                return kind
        return None
    if language == "kotlin":
        if "interface" in keywords:
            return "interface"
        modifiers = next((c for c in node.named_children if c.type == "modifiers"), None)
        if modifiers is not None and "enum" in _text(modifiers).split():
            return "enum"
        return "class"
    return None


def _has_body(node, language: str) -> bool:
    if language in ("c", "cpp"):
        return node.child_by_field_name("body") is not None
    return True


def _bases_of(node, language: str) -> tuple[str, ...]:
    names: list[str] = []
    if language == "python":
        superclasses = node.child_by_field_name("superclasses")
        for child in superclasses.named_children if superclasses is not None else ():
            if child.type not in ("keyword_argument", "comment", "dictionary_splat", "list_splat"):
                names.append(_clean_type(_text(child)))
    elif language == "rust":
        trait = node.child_by_field_name("trait")
        if trait is not None:
            names.append(_clean_type(_text(trait)))
        bounds = node.child_by_field_name("bounds")
        if bounds is not None:
            names.extend(_clean_type(_text(c)) for c in bounds.named_children)
    elif language == "ruby":
        superclass = node.child_by_field_name("superclass")
        if superclass is not None and superclass.named_children:
            names.append(_clean_type(_text(superclass.named_children[0])))
    else:
        for child in node.named_children:
            if child.type in BASE_CLAUSES:
                names.extend(_type_names(child))
    return tuple(dict.fromkeys(n for n in names if n))


def _type_names(clause) -> list[str]:
    if clause.type in TYPE_NAMES:
        return [_clean_type(_text(clause))]
    names = []
    for child in clause.named_children:
        if child.type in NOT_BASES or child.type in COMMENT_NODES:
            continue
        names.extend(_type_names(child))
    return names
