; Ruby
(method name: (_) @name) @def.function
(singleton_method name: (_) @name) @def.function
(class name: [(constant) (scope_resolution)] @name) @def.class
(module name: [(constant) (scope_resolution)] @name) @def.module
(program (assignment left: (constant) @name) @def.const)
(call receiver: (_)? @call.recv method: (identifier) @call.name) @call
(call receiver: (_) @call.recv method: (constant) @call.name) @call
; A bare name standing as a statement calls a method unless it is a variable of its scope (@assign.name).
(body_statement (identifier) @call.bare)
(program (identifier) @call.bare)
(then (identifier) @call.bare)
(else (identifier) @call.bare)
(begin (identifier) @call.bare)
(ensure (identifier) @call.bare)
(block_body (identifier) @call.bare)
(do (identifier) @call.bare)
(parenthesized_statements (identifier) @call.bare)
(assignment left: (identifier) @assign.name)
(operator_assignment left: (identifier) @assign.name)
(left_assignment_list (identifier) @assign.name)
(method_parameters (identifier) @assign.name)
(lambda_parameters (identifier) @assign.name)
(block_parameters (identifier) @assign.name)
(optional_parameter name: (identifier) @assign.name)
(keyword_parameter name: (identifier) @assign.name)
(splat_parameter name: (identifier) @assign.name)
(hash_splat_parameter name: (identifier) @assign.name)
(block_parameter name: (identifier) @assign.name)
(for pattern: (identifier) @assign.name)
