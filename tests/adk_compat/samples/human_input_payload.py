"""google/adk-docs docs/workflows/human-input.md, "Request input with data payload".

Changed: imports only (the page shows none: ``BaseModel``, ``List``, ``Dict``
and ``RequestInput`` are what the snippet names). On the page the
``ActivitiesList`` comes from an agent node; the test's workflow puts a
function node there.
"""

from typing import Dict, List

from pydantic import BaseModel

from engine.adk.events import RequestInput

class ActivitiesList(BaseModel):
   """Itinerary should be a list of dictionaries for each activity. Each
   activity has a name and a description"""
   itinerary: List[Dict[str, str]]

class UserFeedback(BaseModel):
   """Expected response structure from the user."""
   user_response: str

async def get_user_feedback(node_input: ActivitiesList):
   """
   Retrieves the user's thoughts on the agents initial itinerary in order to
   either expand on, change the list, or exit the loop
   """
   message = (
       f"""
       Here is your recommended base itinerary:\n{node_input}\n\n
       Which of these items appeal to you (if any)?
       """
   )

   yield RequestInput(
       message=message,
       payload=node_input,
        response_schema=UserFeedback,
   )
