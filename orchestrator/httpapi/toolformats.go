package httpapi

import (
	"encoding/json"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
)

// Tool list formats of GET /api/runs/{id}/tools: each is the tools array one API takes in its
// request body, so a runtime passes it through unchanged.
const (
	FormatMCP             = "mcp"              // MCP's tools/list tools (name, description, inputSchema, annotations)
	FormatOpenAI          = "openai"           // OpenAI Chat Completions' tools ({type: function, function: {…}})
	FormatOpenAIResponses = "openai_responses" // OpenAI Responses' tools ({type: function, name, parameters, strict})
	FormatAnthropic       = "anthropic"        // Anthropic Messages' tools (name, description, input_schema)
)

// openAIFunction is a Chat Completions function tool's function.
type openAIFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// openAITool is a Chat Completions tool.
type openAITool struct {
	Type     string         `json:"type"`
	Function openAIFunction `json:"function"`
}

// openAIResponsesTool is a Responses API function tool; strict is false, since the offered schemas
// keep optional properties out of required (strict mode wants every property required).
type openAIResponsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

// anthropicTool is a Messages API client tool.
type anthropicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// providerTools lists the run's offered tools in format.
func (s *Server) providerTools(run orchestrator.Run, format string) (any, error) {
	switch format {
	case FormatMCP:
		return mcpTools(run, s.Runs.Hints), nil
	case FormatOpenAI:
		out := make([]openAITool, len(run.OfferedTools))
		for i, t := range run.OfferedTools {
			out[i] = openAITool{Type: "function", Function: openAIFunction{Name: t.Name, Description: t.Description, Parameters: schemaOf(t)}}
		}
		return out, nil
	case FormatOpenAIResponses:
		out := make([]openAIResponsesTool, len(run.OfferedTools))
		for i, t := range run.OfferedTools {
			out[i] = openAIResponsesTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: schemaOf(t)}
		}
		return out, nil
	case FormatAnthropic:
		out := make([]anthropicTool, len(run.OfferedTools))
		for i, t := range run.OfferedTools {
			out[i] = anthropicTool{Name: t.Name, Description: t.Description, InputSchema: schemaOf(t)}
		}
		return out, nil
	}
	return nil, orchestrator.Errorf(orchestrator.EINVALID, "format must be %s, %s, %s or %s, got %q", FormatMCP, FormatOpenAI, FormatOpenAIResponses, FormatAnthropic, clip(format, 40))
}

// runTools answers GET /api/runs/{id}/tools?format=: the run's offered tools as one API's tools
// array (mcp when format is left out).
func (s *Server) runTools(c *fiber.Ctx) error {
	format := c.Query("format", FormatMCP)
	run, err := s.Runs.GetRun(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	tools, err := s.providerTools(run, format)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"run_id": run.ID, "format": format, "tools": tools})
}
