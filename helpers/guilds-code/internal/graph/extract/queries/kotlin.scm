; Kotlin
(class_declaration (type_identifier) @name) @def.class
(object_declaration (type_identifier) @name) @def.class
(function_declaration (simple_identifier) @name) @def.function
(call_expression (simple_identifier) @call.name) @call
(call_expression (navigation_expression (_) @call.recv (navigation_suffix (simple_identifier) @call.name))) @call
