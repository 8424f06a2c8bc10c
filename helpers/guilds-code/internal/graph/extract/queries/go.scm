; Go: symbols, call sites, imports. Captures: @def.<kind> + @name, @recv.type, @call + @call.name + @call.recv, @import.*
(function_declaration name: (identifier) @name) @def.function
(method_declaration
  receiver: (parameter_list (parameter_declaration type: [
    (type_identifier) @recv.type
    (pointer_type (type_identifier) @recv.type)
    (generic_type type: (type_identifier) @recv.type)
    (pointer_type (generic_type type: (type_identifier) @recv.type))]))
  name: (field_identifier) @name) @def.method
(type_spec name: (type_identifier) @name type: (_) @type.body) @def.type
(type_alias name: (type_identifier) @name) @def.type
(method_elem name: (field_identifier) @name) @def.method
(source_file (const_declaration (const_spec name: (identifier) @name) @def.const))
(source_file (var_declaration (var_spec name: (identifier) @name) @def.var))
(call_expression function: (identifier) @call.name) @call
(call_expression function: (selector_expression operand: (_) @call.recv field: (field_identifier) @call.name)) @call
(call_expression function: (index_expression operand: (identifier) @call.name)) @call
(composite_literal type: (type_identifier) @call.name) @call
(composite_literal type: (qualified_type package: (package_identifier) @call.recv name: (type_identifier) @call.name)) @call
(import_spec name: (_)? @import.alias path: (interpreted_string_literal) @import.path) @import
(package_clause (package_identifier) @package)
(function_declaration parameters: (parameter_list (parameter_declaration name: (identifier) @local.name type: [(type_identifier) (pointer_type (type_identifier)) (qualified_type) (pointer_type (qualified_type)) (generic_type) (pointer_type (generic_type)) (slice_type) (map_type) (array_type) (channel_type)] @local.type)))
(function_declaration result: (parameter_list (parameter_declaration name: (identifier) @local.name type: [(type_identifier) (pointer_type (type_identifier)) (qualified_type) (pointer_type (qualified_type)) (generic_type) (pointer_type (generic_type)) (slice_type) (map_type) (array_type) (channel_type)] @local.type)))
(method_declaration receiver: (parameter_list (parameter_declaration name: (identifier) @local.name type: [(type_identifier) (pointer_type (type_identifier)) (qualified_type) (pointer_type (qualified_type)) (generic_type) (pointer_type (generic_type)) (slice_type) (map_type) (array_type) (channel_type)] @local.type)))
(method_declaration parameters: (parameter_list (parameter_declaration name: (identifier) @local.name type: [(type_identifier) (pointer_type (type_identifier)) (qualified_type) (pointer_type (qualified_type)) (generic_type) (pointer_type (generic_type)) (slice_type) (map_type) (array_type) (channel_type)] @local.type)))
(method_declaration result: (parameter_list (parameter_declaration name: (identifier) @local.name type: [(type_identifier) (pointer_type (type_identifier)) (qualified_type) (pointer_type (qualified_type)) (generic_type) (pointer_type (generic_type)) (slice_type) (map_type) (array_type) (channel_type)] @local.type)))
(func_literal parameters: (parameter_list (parameter_declaration name: (identifier) @local.name type: [(type_identifier) (pointer_type (type_identifier)) (qualified_type) (pointer_type (qualified_type)) (generic_type) (pointer_type (generic_type)) (slice_type) (map_type) (array_type) (channel_type)] @local.type))) @local.scope
(func_literal result: (parameter_list (parameter_declaration name: (identifier) @local.name type: [(type_identifier) (pointer_type (type_identifier)) (qualified_type) (pointer_type (qualified_type)) (generic_type) (pointer_type (generic_type)) (slice_type) (map_type) (array_type) (channel_type)] @local.type))) @local.scope
(short_var_declaration left: (expression_list . (identifier) @local.name) right: (expression_list . [(composite_literal type: (_) @local.type) (unary_expression operand: (composite_literal type: (_) @local.type)) (call_expression) @local.type (type_assertion_expression type: (_) @local.type)]))
(var_spec name: (identifier) @local.name type: [(type_identifier) (pointer_type (type_identifier)) (qualified_type) (pointer_type (qualified_type))] @local.type)
(field_declaration name: (field_identifier) @local.name type: [(type_identifier) (pointer_type (type_identifier)) (qualified_type) (pointer_type (qualified_type)) (generic_type) (pointer_type (generic_type)) (slice_type) (map_type) (array_type) (channel_type)] @local.type)
(range_clause left: (expression_list) @local.name right: (_) @local.range)
(field_declaration type: (_)) @local.embed
(interface_type (type_elem . [(type_identifier) (qualified_type)] @local.embed))
(short_var_declaration left: (expression_list) @local.name right: (expression_list) @local.exprs)
(var_spec . name: (identifier) @local.name value: (expression_list . (_) @local.expr))
(type_parameter_declaration name: (identifier) @local.name type: (type_constraint . (_) @local.type))
(argument_list (identifier) @call.name) @value
(argument_list (selector_expression operand: (_) @call.recv field: (field_identifier) @call.name)) @value
(literal_value (literal_element (identifier) @call.name) @value)
(literal_value (literal_element (selector_expression operand: (_) @call.recv field: (field_identifier) @call.name)) @value)
(keyed_element (literal_element) (literal_element (identifier) @call.name) @value)
(keyed_element (literal_element) (literal_element (selector_expression operand: (_) @call.recv field: (field_identifier) @call.name)) @value)
(assignment_statement right: (expression_list (identifier) @call.name) @value)
(assignment_statement right: (expression_list (selector_expression operand: (_) @call.recv field: (field_identifier) @call.name)) @value)
(short_var_declaration right: (expression_list (identifier) @call.name) @value)
(short_var_declaration right: (expression_list (selector_expression operand: (_) @call.recv field: (field_identifier) @call.name)) @value)
(var_spec value: (expression_list (identifier) @call.name) @value)
(var_spec value: (expression_list (selector_expression operand: (_) @call.recv field: (field_identifier) @call.name)) @value)
(return_statement (expression_list (identifier) @call.name) @value)
(return_statement (expression_list (selector_expression operand: (_) @call.recv field: (field_identifier) @call.name)) @value)
(type_switch_statement alias: (expression_list . (identifier) @local.name) (type_case type: (_) @local.case) @local.scope)
