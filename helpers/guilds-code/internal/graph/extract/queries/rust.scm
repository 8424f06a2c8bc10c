; Rust
(function_item name: (identifier) @name) @def.function
(function_signature_item name: (identifier) @name) @def.function
(struct_item name: (type_identifier) @name) @def.struct
(enum_item name: (type_identifier) @name) @def.enum
(union_item name: (type_identifier) @name) @def.struct
(trait_item name: (type_identifier) @name) @def.trait
(type_item name: (type_identifier) @name) @def.type
(const_item name: (identifier) @name) @def.const
(static_item name: (identifier) @name) @def.var
(mod_item name: (identifier) @name) @def.module
(macro_definition name: (identifier) @name) @def.function
(impl_item type: [(type_identifier) @name (generic_type type: (type_identifier) @name) (scoped_type_identifier name: (type_identifier) @name)]) @def.impl
(call_expression function: (identifier) @call.name) @call
(call_expression function: (field_expression value: (_) @call.recv field: (field_identifier) @call.name)) @call
(call_expression function: (scoped_identifier path: (_) @call.recv name: (identifier) @call.name)) @call
(call_expression function: (generic_function function: (identifier) @call.name)) @call
(call_expression function: (generic_function function: (scoped_identifier path: (_) @call.recv name: (identifier) @call.name))) @call
(macro_invocation macro: (identifier) @call.name) @call
(struct_expression name: (type_identifier) @call.name) @call
(parameter pattern: (identifier) @local.name type: (_) @local.type)
(parameter pattern: (mut_pattern (identifier) @local.name) type: (_) @local.type)
(let_declaration pattern: (identifier) @local.name type: (_) @local.type)
(let_declaration pattern: (mut_pattern (identifier) @local.name) type: (_) @local.type)
(let_declaration pattern: (identifier) @local.name value: (_) @local.expr)
(let_declaration pattern: (mut_pattern (identifier) @local.name) value: (_) @local.expr)
(field_declaration name: (field_identifier) @local.name type: (_) @local.type)
(function_item return_type: (_) @local.return)
(function_signature_item return_type: (_) @local.return)
(constrained_type_parameter left: (type_identifier) @local.name bounds: (trait_bounds) @local.type)
(where_predicate left: (type_identifier) @local.name bounds: (trait_bounds) @local.type)
(closure_parameters (identifier) @local.param)
(use_declaration argument: (scoped_identifier path: (_) @import.path name: (identifier) @import.name)) @import
(use_declaration argument: (identifier) @import.path) @import
(use_declaration argument: (use_as_clause path: (scoped_identifier path: (_) @import.path name: (identifier) @import.name) alias: (identifier) @import.alias)) @import
(use_declaration argument: (use_wildcard) @import.path) @import
(scoped_use_list path: (_) @import.path list: (use_list [(identifier) (scoped_identifier) (self)] @import.name)) @import
(scoped_use_list path: (_) @import.path list: (use_list (use_as_clause path: (_) @import.name alias: (identifier) @import.alias))) @import
(for_expression pattern: (identifier) @local.param)
(tuple_struct_pattern (identifier) @local.param)
(tuple_pattern (identifier) @local.param)
(field_pattern (shorthand_field_identifier) @local.param)
(field_pattern pattern: (identifier) @local.param)
(ref_pattern (identifier) @local.param)
(reference_pattern (identifier) @local.param)
