; Ruby
(method name: (_) @name) @def.function
(singleton_method name: (_) @name) @def.function
(class name: [(constant) (scope_resolution)] @name) @def.class
(module name: [(constant) (scope_resolution)] @name) @def.module
(program (assignment left: (constant) @name) @def.const)
(call receiver: (_)? @call.recv method: (identifier) @call.name) @call
(call receiver: (_) @call.recv method: (constant) @call.name) @call
