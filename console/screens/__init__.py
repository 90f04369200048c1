"""The console's screens (sessions, inbox, session, help, modals) and their store loaders."""
