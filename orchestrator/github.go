package orchestrator

import "time"

// GitHubAppEnv is the box's GitHub App as its variables give it, unchecked: connectors/github
// parses the key and the URLs and says what is missing.
type GitHubAppEnv struct {
	AppID        string // GITHUB_APP_ID
	Slug         string // GITHUB_APP_SLUG
	PrivateKey   string // GITHUB_APP_PRIVATE_KEY (PEM, with real newlines or \n escapes)
	ClientID     string // GITHUB_APP_CLIENT_ID
	ClientSecret string // GITHUB_APP_CLIENT_SECRET
	APIURL       string // GITHUB_API_URL ("": https://api.github.com)
	WebURL       string // GITHUB_WEB_URL ("": https://github.com)
	CAFile       string // GITHUB_CA_FILE: a PEM CA trusted for GitHub
}

// GitHubRepo is one repository a GitHub login picked, by GitHub's id (which a rename keeps).
type GitHubRepo struct {
	GitHubID      int64  `json:"github_id"`
	Name          string `json:"name"`
	FullName      string `json:"full_name"`
	URL           string `json:"url"`
	DefaultBranch string `json:"default_branch"`
}

// GuildRepository is one of a guild's repositories: mirrored from a guild-owned GitHub login's
// selection (ConnectionID set), or an extra git URL an operator added.
type GuildRepository struct {
	ID            string    `json:"id"`
	GuildID       string    `json:"guild_id"`
	Name          string    `json:"name"` // the folder under /home/agent/repos
	URL           string    `json:"url"`
	DefaultBranch string    `json:"default_branch"`
	ConnectionID  string    `json:"connection_id,omitempty"`
	GitHubID      int64     `json:"github_id,omitempty"`
	ViaConnection string    `json:"via_connection_id,omitempty"` // an extra URL: the GitHub login found to reach it
	CreatedAt     time.Time `json:"created_at"`
}

// GitHubState is a GitHub Connect's state as the callback reads it.
type GitHubState struct {
	ConnectionID string
	Created      bool   // Connect created the connection: a refused callback deletes it
	Picker       []byte // JSON of the installations the user reached, when there were several
	Status       string // the connection's status now
	Owner        Chain
	ExpiresAt    time.Time
}

// GitHubAgentToken is one sealed installation token an agent's sandbox holds.
type GitHubAgentToken struct {
	AgentID      string
	ConnectionID string
	Sealed       []byte
	Repositories []byte // JSON: the repositories it reaches
	ExpiresAt    time.Time
}

// GitHubInstallation is one installation of the box's App as GitHub lists it.
type GitHubInstallation struct {
	ID        int64  `json:"id"`
	AppID     int64  `json:"app_id"`
	AppSlug   string `json:"app_slug"`
	Account   string `json:"account"`
	Suspended bool   `json:"suspended"`
}

// GitHubRepository is one repository an installation reaches.
type GitHubRepository struct {
	ID            int64  `json:"github_id"`
	Name          string `json:"name"`
	FullName      string `json:"full_name"`
	Owner         string `json:"owner"`
	Private       bool   `json:"private"`
	DefaultBranch string `json:"default_branch"`
	URL           string `json:"url"`
}

// GitHubPick is one repository of a selection (or an extra guild URL) as the operator sends it.
type GitHubPick struct {
	Name          string `json:"name"`
	URL           string `json:"url"`
	DefaultBranch string `json:"default_branch"`
}

// GitHubCallback is what GitHub's redirect to the callback carried, and the login cookie.
type GitHubCallback struct {
	State          string
	Cookie         string
	Code           string
	InstallationID string
	SetupAction    string
}

// GitHubCallbackResult is what the browser gets from the callback: a redirect (the setup hop to
// user authorization), a page, the connection when it completed, or the installations to pick from.
type GitHubCallbackResult struct {
	Redirect   string
	Page       string
	Connection *Connection
	Picker     []GitHubInstallation
}

// GuildRepos is a guild's repositories and the GitHub logins its operator can see.
type GuildRepos struct {
	Repositories []GuildRepository `json:"repositories"`
	Logins       []Connection      `json:"github_logins"`
}

// RepoClone is what a coding run's start did with one guild repository in the workspace.
type RepoClone struct {
	Name  string `json:"name"`
	URL   string `json:"url"`
	Path  string `json:"path"`            // /home/agent/repos/<name>
	Done  string `json:"done"`            // cloned, fetched or failed
	Error string `json:"error,omitempty"` // git's own words when it failed
}
