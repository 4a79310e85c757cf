"""The references of one file, for the code graph: every name its code uses, with the line and how.

`file_uses(text, language)` parses the file with tree-sitter (the chunker's grammars) and returns
{name: [Use, ...]}: calls, attribute uses, imports, base classes, types and other name reads; a member
use (`obj.attr`, `self.run()`) keeps its receiver's name ("?" for an expression). Parameters and
assigned names are kept as local bindings ("l"), so a query never takes a local for a definition
elsewhere. A definition's own name and keyword-argument names are not uses; comments and strings hold
no identifiers. The names are resolved to definitions at query time (services/retrieval/graph.py).

The tree-sitter language pack ships no tags queries for most grammars, so this is one small query per
language (its identifier node types) and a look at each identifier's parents, shared by every language.
"""

from __future__ import annotations

import re
from functools import lru_cache

from services.indexing.chunking.languages import BASE_CLAUSES, CONTAINER_NODES, FUNCTION_NODES, GRAMMARS
from services.indexing.chunking.treesitter import parser_for
from services.indexing.chunking.windows import normalise_newlines
from services.storage.code_graph import Use

IDENTIFIER_TYPES = ("identifier", "type_identifier", "field_identifier", "property_identifier",
                    "shorthand_property_identifier", "simple_identifier", "constant", "name",
                    "namespace_identifier", "private_property_identifier")
# Nodes naming a member of something (`a.b`, `a->b`, `a::b`): the last name is the member used.
MEMBER_NODES = {"attribute", "member_expression", "field_expression", "selector_expression", "navigation_expression",
                "navigation_suffix", "member_access_expression", "field_access", "scoped_identifier",
                "qualified_identifier", "scoped_type_identifier", "nested_type_identifier", "qualified_name",
                "scope_resolution", "dotted_name", "member_call_expression", "generic_name", "user_type"}
CALL_NODES = {"call", "call_expression", "method_invocation", "invocation_expression", "function_call_expression",
              "member_call_expression", "scoped_call_expression", "object_creation_expression", "new_expression",
              "method_call", "macro_invocation", "constructor_invocation"}
IMPORT_NODES = {"import_statement", "import_from_statement", "future_import_statement", "import_declaration",
                "import_spec", "use_declaration", "using_directive", "preproc_include", "namespace_use_declaration",
                "import_header", "import_clause", "named_imports"}
PARAMETER_NODES = {"parameters", "lambda_parameters", "formal_parameters"}
NAMED_PARAMETERS = {"default_parameter", "typed_default_parameter", "keyword_argument", "formal_parameter",
                    "parameter", "parameter_declaration", "required_parameter", "optional_parameter",
                    "typed_parameter"}
# A statement binding names, and the field holding them (a pattern of several names is climbed).
BINDERS = {"assignment": "left", "augmented_assignment": "left", "for_statement": "left", "for_in_clause": "left",
           "named_expression": "name", "as_pattern": "alias", "variable_declarator": "name",
           "short_var_declaration": "left", "let_declaration": "pattern"}
PATTERNS = {"pattern_list", "tuple_pattern", "list_pattern", "list_splat_pattern", "dictionary_splat_pattern",
            "as_pattern_target", "expression_list"}
RECEIVER_FIELDS = ("object", "operand", "value", "scope", "argument", "expression")
UNCOUNTED = frozenset({"self", "cls", "this", "super", "_"})
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
MAX_CLIMB = 6  # parents looked at for an import or a base clause around a name


def file_uses(text: str, language: str) -> dict[str, list[Use]]:
    """{name: its uses in the file, by line} for a language with a grammar; {} for any other."""
    query = _query(language)
    if query is None or not text.strip():
        return {}
    from tree_sitter import QueryCursor

    tree = parser_for(language).parse(normalise_newlines(text).encode("utf-8"))
    found: dict[str, dict[tuple[int, str, str], Use]] = {}
    for nodes in QueryCursor(query).captures(tree.root_node).values():
        for node in nodes:
            name = node.text.decode("utf-8", "replace")
            if len(name) < 2 or name in UNCOUNTED:
                continue
            use = _use(node, language)
            if use is not None:
                found.setdefault(name, {}).setdefault((use.line, use.kind, use.receiver), use)
    if language == "python":
        _forward_references(tree.root_node, found)
    return {name: sorted(uses.values(), key=lambda u: (u.line, u.kind)) for name, uses in sorted(found.items())}


def _forward_references(root, found: dict[str, dict[tuple[int, str, str], Use]]) -> None:
    """Python's quoted annotations (`session: "Session"`, `Callable[["Config"], None]`) are type uses."""
    from tree_sitter import QueryCursor

    for nodes in QueryCursor(_string_query()).captures(root).values():
        for node in nodes:
            text = node.text.decode("utf-8", "replace")
            if _DOTTED.fullmatch(text) and _ancestor(node, {"type"}) is not None:
                name = text.rsplit(".", 1)[-1]
                if len(name) >= 2 and name not in UNCOUNTED:
                    line = node.start_point[0] + 1
                    found.setdefault(name, {}).setdefault((line, "t", ""), Use(line, "t"))


@lru_cache(maxsize=None)
def _string_query():
    from tree_sitter import Query
    from tree_sitter_language_pack import get_language

    return Query(get_language("python"), "(string (string_content) @text)")


@lru_cache(maxsize=None)
def _query(language: str):
    """One query capturing every identifier node type the language's grammar has; None without a grammar."""
    grammar = GRAMMARS.get(language)
    if grammar is None:
        return None
    from tree_sitter import Query
    from tree_sitter_language_pack import get_language

    lang = get_language(grammar)
    kinds = []
    for kind in IDENTIFIER_TYPES:
        try:
            Query(lang, f"({kind}) @n")
        except Exception:  # the grammar has no such node type
            continue
        kinds.append(f"({kind})")
    return Query(lang, f"[{' '.join(kinds)}] @name") if kinds else None


def _use(node, language: str) -> Use | None:
    parent = node.parent
    if parent is None or _defines(node, parent, language):
        return None
    line = node.start_point[0] + 1
    if _binds(node, parent):
        return Use(line, "l")
    imported = _ancestor(node, IMPORT_NODES)
    if imported is not None:
        return _import(node, imported, line, language)
    if _is_base(node, language):
        return Use(line, "b")
    top, member = node, False
    while top.parent is not None and top.parent.type in MEMBER_NODES and top.end_byte == top.parent.end_byte:
        top, member = top.parent, True
    holder = top.parent
    receiver = _receiver(node) if member else ""
    if holder is not None and holder.type in CALL_NODES and _callee(holder, top, node):
        return Use(line, "c", receiver=receiver)
    if member and node is not top:
        return Use(line, "a", receiver=receiver)
    if node.type.endswith("type_identifier") or parent.type in ("type", "user_type"):
        return Use(line, "t")
    return Use(line, "n")


def _defines(node, parent, language: str) -> bool:
    """Whether the name is a definition's own (function, class) or a keyword argument's."""
    named = parent.child_by_field_name("name")
    if parent.type == "keyword_argument":
        return named == node
    if parent.type in FUNCTION_NODES.get(language, ()) or parent.type in CONTAINER_NODES.get(language, ()):
        return named == node or (named is None and parent.named_children[0] == node)
    if parent.type == "function_declarator":  # C/C++: the declarator holds the name
        return parent.child_by_field_name("declarator") == node
    if parent.type == "variable_declarator" and language in ("javascript", "typescript", "tsx"):
        value = parent.child_by_field_name("value")
        return named == node and value is not None and value.type in ("arrow_function", "function_expression",
                                                                     "function")
    return False


def _binds(node, parent) -> bool:
    """Whether the name is bound here: a parameter, or assigned (`x = ...`, `for x in`, `as x`)."""
    if parent.type in PARAMETER_NODES or parent.type in PATTERNS and parent.parent is not None \
            and parent.parent.type in PARAMETER_NODES:
        return True
    if parent.type in NAMED_PARAMETERS:
        named = parent.child_by_field_name("name")
        return named == node or (named is None and bool(parent.named_children) and parent.named_children[0] == node)
    top = node
    while top.parent is not None and top.parent.type in PATTERNS:
        top = top.parent
    holder = top.parent
    field = BINDERS.get(holder.type) if holder is not None else None
    return field is not None and holder.child_by_field_name(field) == top


def _receiver(node) -> str:
    """The name a member is used on (`self`, `config`), "?" when it is used on an expression."""
    member = node.parent
    target = next((t for t in (member.child_by_field_name(f) for f in RECEIVER_FIELDS) if t is not None), None)
    if target is None and member.named_children and member.named_children[0] != node:
        target = member.named_children[0]
    if target is None or target == node:
        return "?"
    text = target.text.decode("utf-8", "replace")
    return text if re.fullmatch(r"[A-Za-z_]\w*", text) else "?"


def _callee(call, top, node) -> bool:
    """Whether `top` (the name or the member expression ending in it) is what `call` calls."""
    for field in ("function", "name", "method", "constructor", "macro"):
        target = call.child_by_field_name(field)
        if target is not None:
            return target == top or target == node
    return bool(call.named_children) and call.named_children[0] == top


def _ancestor(node, types: set[str]):
    current = node.parent
    for _ in range(MAX_CLIMB):
        if current is None:
            return None
        if current.type in types:
            return current
        current = current.parent
    return None


def _import(node, statement, line: int, language: str) -> Use | None:
    """A name an import brings in; Python keeps the module it comes from (`from a.b import f`: "a.b")
    and leaves out the module path's own parts."""
    if language != "python" or statement.type != "import_from_statement":
        return Use(line, "i")
    module = statement.child_by_field_name("module_name")
    if module is not None and module.start_byte <= node.start_byte < module.end_byte:
        return None
    return Use(line, "i", module.text.decode("utf-8", "replace") if module is not None else "")


def _is_base(node, language: str) -> bool:
    if language == "python":
        listing = node.parent
        while listing is not None and listing.type in MEMBER_NODES:
            listing = listing.parent
        return (listing is not None and listing.type == "argument_list" and listing.parent is not None
                and listing.parent.type == "class_definition")
    return _ancestor(node, BASE_CLAUSES) is not None
