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
