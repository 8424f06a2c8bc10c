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
(parameters (identifier) @local.param)
(parameters (default_parameter name: (identifier) @local.param))
(parameters (typed_parameter (identifier) @local.name type: (type) @local.type))
(parameters (typed_default_parameter name: (identifier) @local.name type: (type) @local.type))
(function_definition return_type: (type) @local.return)
(return_statement (call function: [(identifier) (attribute)]) @local.return)
(class_definition superclasses: (argument_list [(identifier) (attribute)] @local.base))
(assignment left: [(identifier) (attribute)] @local.name type: (type) @local.type)
(assignment left: [(identifier) (attribute)] @local.name right: (call function: [(identifier) (attribute)]) @local.type)
(assignment left: [(identifier) (attribute)] @local.name right: [(identifier) (attribute)] @local.type)
(assignment left: [(identifier) (attribute)] @local.name right: [(list) (dictionary) (set) (tuple) (string) (concatenated_string) (integer) (float) (list_comprehension) (dictionary_comprehension) (set_comprehension) (generator_expression) (true) (false)] @local.value)
(for_statement left: (identifier) @local.param)
(for_statement left: (pattern_list (identifier) @local.param))
(for_in_clause left: (identifier) @local.param)
(for_in_clause left: (pattern_list (identifier) @local.param))
(as_pattern alias: (as_pattern_target (identifier) @local.param))
(assignment left: (pattern_list (identifier) @local.param))
(attribute object: (_) @call.recv attribute: (identifier) @call.name) @value
(decorated_definition (decorator (identifier) @local.type) definition: (function_definition name: (identifier) @local.name))
(decorated_definition (decorator (attribute) @local.type) definition: (function_definition name: (identifier) @local.name))
(parameters (list_splat_pattern (identifier) @local.name) @local.value)
(parameters (dictionary_splat_pattern (identifier) @local.name) @local.value)
(assignment left: (identifier) @local.name right: (subscript) @local.type)
(return_statement [(identifier) (attribute)] @local.return)
