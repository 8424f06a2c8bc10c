package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
)

// Codes only the HTTP layer answers: the route exists but not for that method, and a body past
// BodyLimit.
const (
	EMETHOD   = "EMETHOD"
	ETOOLARGE = "ETOOLARGE"
)

// statusOf is the one place an error code becomes an HTTP status.
func statusOf(code string) int {
	switch code {
	case orchestrator.ENOTFOUND:
		return http.StatusNotFound
	case orchestrator.EFORBIDDEN:
		return http.StatusForbidden
	case orchestrator.EINVALID:
		return http.StatusUnprocessableEntity
	case orchestrator.EMALFORMED:
		return http.StatusBadRequest
	case orchestrator.ECONFLICT:
		return http.StatusConflict
	case orchestrator.EUNAUTHORIZED:
		return http.StatusUnauthorized
	case orchestrator.EUPSTREAM:
		return http.StatusBadGateway
	case EMETHOD:
		return http.StatusMethodNotAllowed
	case orchestrator.EUNAVAILABLE:
		return http.StatusServiceUnavailable
	case ETOOLARGE:
		return http.StatusRequestEntityTooLarge
	case orchestrator.ELIMIT:
		return http.StatusTooManyRequests
	default:
		return http.StatusInternalServerError
	}
}

// errorBody is the JSON of every error answer.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// errorHandler renders every error a handler returns as {"error": {"code", "message"}}. Internal
// errors are logged with their detail and answered with a generic message.
func (s *Server) errorHandler(c *fiber.Ctx, err error) error {
	code, msg := orchestrator.ErrorCode(err), orchestrator.ErrorMessage(err)
	var fe *fiber.Error
	if errors.As(err, &fe) {
		switch fe.Code {
		case http.StatusNotFound:
			code, msg = orchestrator.ENOTFOUND, "no route "+c.Method()+" "+c.Path()+"; the API is described at GET /api/openapi.json"
		case http.StatusMethodNotAllowed:
			code, msg = EMETHOD, "method "+c.Method()+" is not allowed on "+c.Path()+"; see GET /api/openapi.json"
		case http.StatusRequestEntityTooLarge:
			code, msg = ETOOLARGE, fmt.Sprintf("request body is larger than the %d MiB limit; send less (a large file is better written in the sandbox, by shell, or in parts)", BodyLimit>>20)
		case http.StatusBadRequest:
			code, msg = orchestrator.EMALFORMED, fe.Message
		default:
			code, msg = orchestrator.EINTERNAL, fe.Message
		}
	}
	if s.OnError != nil {
		defer func() { s.OnError(code) }() // the code as answered, after an outage's 503 replaced it
	}
	status := statusOf(code)
	if status == http.StatusInternalServerError && s.Health != nil {
		// An internal error while the database is down is the outage, which the monitor logs once.
		if down := s.Health.DatabaseErr(c.UserContext(), err); down != nil {
			code, msg, status = orchestrator.EUNAVAILABLE, orchestrator.ErrorMessage(down), http.StatusServiceUnavailable
		}
	}
	if status == http.StatusServiceUnavailable {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(retryAfter))
	} else if status >= 500 {
		s.log().Error("request failed", "method", c.Method(), "path", c.Path(), "err", err.Error())
	}
	var de *orchestrator.Error
	if errors.As(err, &de) && len(de.Fields) > 0 && de.Code == code {
		body := map[string]any{}
		for k, v := range de.Fields {
			body[k] = v
		}
		body["code"], body["message"] = code, msg
		return c.Status(status).JSON(map[string]any{"error": body})
	}
	return c.Status(status).JSON(errorBody{Error: errorDetail{Code: code, Message: msg}})
}
