"""Per-language tables for the tree-sitter chunker: which nodes are definitions, and of what kind."""

from __future__ import annotations

# Our language name -> tree-sitter-language-pack grammar name.
GRAMMARS = {
    "python": "python", "javascript": "javascript", "typescript": "typescript", "tsx": "tsx",
    "java": "java", "csharp": "csharp", "go": "go", "rust": "rust", "swift": "swift",
    "kotlin": "kotlin", "c": "c", "cpp": "cpp", "ruby": "ruby", "php": "php",
}

# Node types that define a callable. Inside a container they become "method".
FUNCTION_NODES = {
    "python": {"function_definition"},
    "javascript": {"function_declaration", "generator_function_declaration", "method_definition"},
    "typescript": {"function_declaration", "generator_function_declaration", "method_definition"},
    "tsx": {"function_declaration", "generator_function_declaration", "method_definition"},
    "java": {"method_declaration", "constructor_declaration", "compact_constructor_declaration"},
    "csharp": {"method_declaration", "constructor_declaration", "destructor_declaration",
               "operator_declaration"},
    "go": {"function_declaration", "method_declaration"},
    "rust": {"function_item"},
    "swift": {"function_declaration", "init_declaration", "deinit_declaration"},
    "kotlin": {"function_declaration", "secondary_constructor"},
    "c": {"function_definition"},
    "cpp": {"function_definition"},
    "ruby": {"method", "singleton_method"},
    "php": {"function_definition", "method_declaration"},
}

# Node types that define a type, with their kind (None: decided by `container_kind`).
CONTAINER_NODES = {
    "python": {"class_definition": "class"},
    "javascript": {"class_declaration": "class", "class": "class"},
    "typescript": {"class_declaration": "class", "abstract_class_declaration": "class",
                   "interface_declaration": "interface", "enum_declaration": "enum"},
    "tsx": {"class_declaration": "class", "abstract_class_declaration": "class",
            "interface_declaration": "interface", "enum_declaration": "enum"},
    "java": {"class_declaration": "class", "record_declaration": "class",
             "interface_declaration": "interface", "annotation_type_declaration": "interface",
             "enum_declaration": "enum"},
    "csharp": {"class_declaration": "class", "record_declaration": "class",
               "struct_declaration": "struct", "record_struct_declaration": "struct",
               "interface_declaration": "interface", "enum_declaration": "enum"},
    "go": {"type_spec": None},
    "rust": {"struct_item": "struct", "union_item": "struct", "enum_item": "enum",
             "trait_item": "interface", "impl_item": "class"},
    "swift": {"class_declaration": None, "protocol_declaration": "protocol"},
    "kotlin": {"class_declaration": None, "object_declaration": "class"},
    "c": {"struct_specifier": "struct", "union_specifier": "struct", "enum_specifier": "enum"},
    "cpp": {"struct_specifier": "struct", "union_specifier": "struct", "enum_specifier": "enum",
            "class_specifier": "class"},
    "ruby": {"class": "class", "module": "class"},
    "php": {"class_declaration": "class", "interface_declaration": "interface",
            "trait_declaration": "class", "enum_declaration": "enum"},
}

# Nodes wrapping a definition whose span (decorators, `export`, `type`) belongs to the chunk.
WRAPPERS = {"decorated_definition", "export_statement", "type_declaration", "template_declaration"}

# Clauses listing base types / conformances.
BASE_CLAUSES = {
    "superclass", "super_interfaces", "extends_interfaces", "class_heritage", "extends_clause",
    "implements_clause", "extends_type_clause", "base_list", "delegation_specifier",
    "inheritance_specifier", "base_class_clause", "base_clause", "class_interface_clause",
}

# Nodes naming a type inside a base clause (taken whole, then cleaned).
TYPE_NAMES = {
    "identifier", "type_identifier", "generic_type", "scoped_type_identifier", "member_expression",
    "qualified_name", "user_type", "nested_type_identifier", "constant", "scope_resolution", "name",
    "qualified_identifier", "template_type", "scoped_identifier", "constructor_invocation",
    "generic_name", "predefined_type", "attribute",
}

# Never look for base names inside these (generic arguments, constructor arguments).
NOT_BASES = {
    "type_arguments", "type_parameters", "arguments", "value_arguments", "type_argument_list",
    "template_argument_list", "access_specifier", "argument_list", "where_clause",
}

COMMENT_NODES = {"comment", "line_comment", "block_comment", "multiline_comment"}
# Nodes that may sit between a doc comment and its definition.
ATTRIBUTE_NODES = {"attribute_item", "attribute_list", "annotation", "decorator"}
