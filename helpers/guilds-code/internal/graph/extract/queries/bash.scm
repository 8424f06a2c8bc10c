; Bash
(function_definition name: (word) @name) @def.function
(command name: (command_name (word) @call.name)) @call
