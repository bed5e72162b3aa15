print("moonflow")
