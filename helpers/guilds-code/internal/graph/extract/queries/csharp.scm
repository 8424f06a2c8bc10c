; C#
(class_declaration name: (identifier) @name) @def.class
(interface_declaration name: (identifier) @name) @def.interface
(struct_declaration name: (identifier) @name) @def.struct
(enum_declaration name: (identifier) @name) @def.enum
(record_declaration name: (identifier) @name) @def.class
(method_declaration name: (identifier) @name) @def.method
(constructor_declaration name: (identifier) @name) @def.method
(namespace_declaration name: (_) @name) @def.module
(invocation_expression function: (identifier) @call.name) @call
(invocation_expression function: (member_access_expression expression: (_) @call.recv name: (identifier) @call.name)) @call
(object_creation_expression type: (identifier) @call.name) @call
