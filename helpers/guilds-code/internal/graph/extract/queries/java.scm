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
