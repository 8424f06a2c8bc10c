; TypeScript and TSX (sharedQuery)
(function_declaration name: (identifier) @name) @def.function
(generator_function_declaration name: (identifier) @name) @def.function
(function_signature name: (identifier) @name) @def.function
(class_declaration name: (type_identifier) @name) @def.class
(abstract_class_declaration name: (type_identifier) @name) @def.class
(interface_declaration name: (type_identifier) @name) @def.interface
(type_alias_declaration name: (type_identifier) @name) @def.type
(enum_declaration name: (identifier) @name) @def.enum
(method_definition name: (property_identifier) @name) @def.method
(method_signature name: (property_identifier) @name) @def.method
(abstract_method_signature name: (property_identifier) @name) @def.method
(variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)]) @def.function
(program (lexical_declaration (variable_declarator name: (identifier) @name) @def.const))
(program (export_statement (lexical_declaration (variable_declarator name: (identifier) @name) @def.const)))
(call_expression function: (identifier) @call.name) @call
(call_expression function: (member_expression object: (_) @call.recv property: (property_identifier) @call.name)) @call
(new_expression constructor: (identifier) @call.name) @call
(import_statement (import_clause (identifier) @import.alias) source: (string) @import.path) @import
(import_statement (import_clause (named_imports (import_specifier name: (identifier) @import.name alias: (identifier)? @import.alias))) source: (string) @import.path) @import
(import_statement (import_clause (namespace_import (identifier) @import.alias)) source: (string) @import.path) @import
(variable_declarator name: (identifier) @local.name value: (new_expression constructor: (identifier) @local.type))
(required_parameter pattern: (identifier) @local.name type: (type_annotation (type_identifier) @local.type))
