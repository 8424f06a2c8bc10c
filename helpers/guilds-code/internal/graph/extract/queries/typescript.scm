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
(class_declaration (class_heritage (extends_clause value: [(identifier) (member_expression)] @local.base)))
(abstract_class_declaration (class_heritage (extends_clause value: [(identifier) (member_expression)] @local.base)))
(class_declaration (class_heritage (implements_clause [(type_identifier) (generic_type)] @local.base)))
(abstract_class_declaration (class_heritage (implements_clause [(type_identifier) (generic_type)] @local.base)))
(interface_declaration (extends_type_clause [(type_identifier) (generic_type)] @local.base))
(public_field_definition name: (property_identifier) @local.name type: (type_annotation (_) @local.type))
(public_field_definition name: (property_identifier) @local.name value: (new_expression constructor: (identifier) @local.type))
(required_parameter pattern: (identifier) @local.name type: (type_annotation [(generic_type) (union_type) (nested_type_identifier) (predefined_type) (array_type) (function_type) (object_type) (literal_type)] @local.type))
(optional_parameter pattern: (identifier) @local.name type: (type_annotation (_) @local.type))
(variable_declarator name: (identifier) @local.name type: (type_annotation (_) @local.type))
(variable_declarator name: (identifier) @local.name value: (call_expression function: [(identifier) (member_expression)]) @local.type)
(variable_declarator name: (identifier) @local.name value: (new_expression constructor: (member_expression) @local.type))
(variable_declarator name: (identifier) @local.name value: [(string) (template_string) (number) (array) (object) (true) (false) (arrow_function) (function_expression)] @local.value)
(assignment_expression left: (member_expression object: (this) property: (property_identifier)) @local.name right: (new_expression constructor: (identifier) @local.type))
(function_declaration return_type: (type_annotation (_) @local.return))
(function_signature return_type: (type_annotation (_) @local.return))
(method_definition return_type: (type_annotation (_) @local.return))
(method_signature return_type: (type_annotation (_) @local.return))
(call_expression function: (super) @call.name) @call
(call_expression function: [(identifier) (member_expression)] @local.type arguments: (arguments (arrow_function parameters: (formal_parameters) @local.name)))
(new_expression constructor: (identifier) @local.type arguments: (arguments (arrow_function parameters: (formal_parameters) @local.name)))
(member_expression object: (_) @call.recv property: (property_identifier) @call.name) @value
(public_field_definition name: (property_identifier) @local.name value: (call_expression function: [(identifier) (member_expression)]) @local.type)
(assignment_expression left: (member_expression object: (this) property: (property_identifier)) @local.name right: (call_expression function: [(identifier) (member_expression)]) @local.type)
(assignment_expression left: (member_expression object: (this) property: (property_identifier)) @local.name right: (identifier) @local.type)
(required_parameter pattern: (identifier) @local.name value: (new_expression constructor: (identifier) @local.type))
(required_parameter pattern: (identifier) @local.name value: [(string) (template_string) (number) (array) (object) (true) (false)] @local.value)
(export_statement source: (string) @import.path) @import
(export_statement (export_clause (export_specifier name: (identifier) @import.name alias: (identifier)? @import.alias)) source: (string) @import.path) @import
(required_parameter pattern: (identifier) @local.param)
(optional_parameter pattern: (identifier) @local.param)
