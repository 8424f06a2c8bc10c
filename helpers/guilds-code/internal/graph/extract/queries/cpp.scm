; C++
(function_definition declarator: (function_declarator declarator: [(identifier) (field_identifier) (operator_name) (destructor_name)] @name)) @def.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))) @def.function
(function_definition declarator: (reference_declarator (function_declarator declarator: (identifier) @name))) @def.function
(function_definition declarator: (function_declarator declarator: (qualified_identifier scope: (_) @recv.type name: [(identifier) (destructor_name) (operator_name)] @name))) @def.method
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (qualified_identifier scope: (_) @recv.type name: (identifier) @name)))) @def.method
(function_definition declarator: (reference_declarator (function_declarator declarator: (qualified_identifier scope: (_) @recv.type name: (identifier) @name)))) @def.method
(field_declaration declarator: (function_declarator declarator: (field_identifier) @name)) @decl.method
(class_specifier name: (type_identifier) @name body: (_)) @def.class
(struct_specifier name: (type_identifier) @name body: (_)) @def.struct
(union_specifier name: (type_identifier) @name body: (_)) @def.struct
(enum_specifier name: (type_identifier) @name body: (_)) @def.enum
(type_definition declarator: (type_identifier) @name) @def.type
(alias_declaration name: (type_identifier) @name) @def.type
(namespace_definition name: (namespace_identifier) @name) @def.module
(preproc_def name: (identifier) @name) @def.const
(preproc_function_def name: (identifier) @name) @def.function
(call_expression function: (identifier) @call.name) @call
(call_expression function: (qualified_identifier scope: (_) @call.recv name: (identifier) @call.name)) @call
(call_expression function: (field_expression argument: (_) @call.recv field: (field_identifier) @call.name)) @call
(call_expression function: (template_function name: (identifier) @call.name)) @call
(new_expression type: (type_identifier) @call.name) @call
