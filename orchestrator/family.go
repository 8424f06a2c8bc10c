package orchestrator

// Tool families: the Family a native tool registers with (registry.Tool.Family). The offer policy
// and the access views group tools by it.
const (
	FamilyAlways    = "always"    // offered on every run whatever the policy and flags (report_issue)
	FamilyBrowser   = "browser"   // the browser tools: follow config.browser
	FamilyCode      = "code"      // the code tools: follow config.coding
	FamilyScripts   = "scripts"   // the script tools: follow config.scripting
	FamilyMemory    = "memory"    // memory_write: follows config.memory, on direct, group and schedule runs
	FamilySchedules = "schedules" // the schedule tools: direct and group-chat runs only
	FamilySecrets   = "secrets"   // secret_store, secret_request (direct runs only)
	FamilyNotes     = "notes"     // the note tools
	FamilyRecords   = "records"   // the record tools
	FamilySearch    = "search"    // tavily_search
	FamilyGroup     = "group"     // group_post
)
