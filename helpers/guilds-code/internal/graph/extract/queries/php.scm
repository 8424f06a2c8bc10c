; PHP
(function_definition name: (name) @name) @def.function
(class_declaration name: (name) @name) @def.class
(interface_declaration name: (name) @name) @def.interface
(trait_declaration name: (name) @name) @def.trait
(method_declaration name: (name) @name) @def.method
(function_call_expression function: (name) @call.name) @call
(member_call_expression object: (_) @call.recv name: (name) @call.name) @call
(scoped_call_expression scope: (_) @call.recv name: (name) @call.name) @call
(object_creation_expression (name) @call.name) @call
