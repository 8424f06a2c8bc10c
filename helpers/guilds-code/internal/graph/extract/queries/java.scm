; Java
(class_declaration name: (identifier) @name) @def.class
(interface_declaration name: (identifier) @name) @def.interface
(enum_declaration name: (identifier) @name) @def.enum
(record_declaration name: (identifier) @name) @def.class
(annotation_type_declaration name: (identifier) @name) @def.interface
(method_declaration name: (identifier) @name) @def.method
(constructor_declaration name: (identifier) @name) @def.method
(method_invocation object: (_)? @call.recv name: (identifier) @call.name) @call
(object_creation_expression type: (type_identifier) @call.name) @call
(local_variable_declaration type: (type_identifier) @local.type declarator: (variable_declarator name: (identifier) @local.name))
(formal_parameter type: (type_identifier) @local.type name: (identifier) @local.name)
(import_declaration (scoped_identifier scope: (_) @import.path name: (identifier) @import.name)) @import
(import_declaration (scoped_identifier) @import.path (asterisk)) @import
(field_declaration type: (_) @local.type declarator: (variable_declarator name: (identifier) @local.name))
(local_variable_declaration type: [(generic_type) (scoped_type_identifier) (array_type)] @local.type declarator: (variable_declarator name: (identifier) @local.name))
(local_variable_declaration declarator: (variable_declarator name: (identifier) @local.name value: (_) @local.expr))
(formal_parameter type: [(generic_type) (scoped_type_identifier) (array_type)] @local.type name: (identifier) @local.name)
(spread_parameter (_) @local.type (variable_declarator name: (identifier) @local.name))
(enhanced_for_statement type: (_) @local.type name: (identifier) @local.name)
(lambda_expression parameters: (identifier) @local.param)
(inferred_parameters (identifier) @local.param)
(method_declaration type: (_) @local.return)
(superclass (_) @local.base)
(super_interfaces (type_list (_) @local.base))
(extends_interfaces (type_list (_) @local.base))
(object_creation_expression type: (generic_type (type_identifier) @call.name)) @call
