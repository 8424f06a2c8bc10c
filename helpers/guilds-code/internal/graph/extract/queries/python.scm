; Python
(function_definition name: (identifier) @name) @def.function
(class_definition name: (identifier) @name) @def.class
(module (expression_statement (assignment left: (identifier) @name) @def.var))
(call function: (identifier) @call.name) @call
(call function: (attribute object: (_) @call.recv attribute: (identifier) @call.name)) @call
(import_statement name: (dotted_name) @import.path) @import
(import_statement name: (aliased_import name: (dotted_name) @import.path alias: (identifier) @import.alias)) @import
(import_from_statement module_name: (_) @import.path name: (dotted_name) @import.name) @import
(import_from_statement module_name: (_) @import.path name: (aliased_import name: (dotted_name) @import.name alias: (identifier) @import.alias)) @import
(assignment left: (identifier) @local.name right: (call function: (identifier) @local.type))
