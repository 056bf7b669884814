from django import template

from knowledge.rendering import render_markdown

register = template.Library()
register.filter("markdown", render_markdown)
